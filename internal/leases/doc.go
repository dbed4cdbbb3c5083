// Package leases is a held lease and what keeps it: the Target it holds
// (the lock's name, settings, keys and queue), the Client's Runtime it runs
// on (nodes, hub, gates, goroutines, calls in progress), renewal (the
// Watchdog and Extend), fencing, release and the Sweeper of unanswered
// releases, and loss. Verdict turns any round's replies into its error.
// The Lock call above it (package engine) makes leases; nothing here
// knows how a lock was acquired.
package leases
