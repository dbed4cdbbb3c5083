// Package topology holds the slower tests of the deployments users run
// beside plain redis-server nodes: members that are Redis Clusters, and
// members that are a master with replicas failed over by redis-sentinel.
// Its tests are behind the build tag topology: `make topology` runs them.
package topology
