// Package chaos holds the fault-injection suite (tier 3 of the test plan):
// contention workloads over five real redis-server nodes, with faults
// injected between each client and each node by in-process proxies
// (redlocktest/faultproxy) and on the nodes themselves (kill, pause, restart,
// fast clocks via libfaketime). Every grant goes to the safety checker.
// It has no code outside its tests.
package chaos
