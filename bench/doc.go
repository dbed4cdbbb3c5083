// Package bench compares this library with go-redsync/redsync on the same
// local redis-server nodes, in one run, so that benchstat can line the two
// up. It lives in its own module so that the root module never depends on
// redsync. The benchmarks are in the _test.go files; see README.md.
package bench
