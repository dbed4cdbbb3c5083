// Package bench compares this library with go-redsync/redsync, and where
// they apply bsm/redislock and rueidis/rueidislock, on the same local
// redis-server nodes, in one run, so that benchstat can line them up. It
// lives in its own module so that the root module never depends on them.
// The benchmarks are in the _test.go files; see README.md.
package bench
