// Package redlock grants one lock over N independent Redis nodes (the
// Redlock algorithm), with reentrancy, renewal that reports loss, and
// fencing tokens.
//
// # Model
//
// A lock is granted when a quorum of the nodes (a majority by default)
// accepted it within its validity window: the TTL less the time the round
// took and an allowance for clock drift (TTL*driftFactor + 2ms). The lease
// is valid until Lease.Until; its Context is cancelled then (by a timer on
// this process's monotonic clock, timer latency aside), or as soon as it is
// released.
//
//	c, err := redlock.Dial([]string{"redis://a:6379", "redis://b:6379", "redis://c:6379"})
//	...
//	lease, err := c.Mutex("invoice-42").Lock(ctx)
//	if err != nil { ... }
//	defer lease.Unlock(context.Background())
//	work(lease.Context()) // stop when it is done
//
// # Guarantees and their assumptions
//
// Two owners never both hold a valid lease on one name, provided that:
//   - a node that may have forgotten a lease (a restart from a snapshot or
//     without persistence, FLUSHALL, eviction) does not vote for the
//     longest TTL in use. The restart guard checks it (WithRestartGuard,
//     on by default): what stays assumed is that the guard is at least the
//     longest TTL of any Client on the same names, that no lock key goes
//     while the marker stays unseen (DEL by hand; an eviction, a RESTORE
//     or a DEBUG RELOAD within a second of the last vote), and that a
//     promotion is seen (docs/restart-guard.md);
//   - a node whose clock runs fast, against the client's monotonic clock,
//     by more than the drift factor does not count. The clock check
//     checks it (WithClockCheck, on by default; not on Redis Cluster
//     clients): what stays assumed is that this process's monotonic
//     clock runs true, and that a node whose clock runs fast by less than
//     about three times is not needed for a quorum before the check has
//     readings of it spread far enough to prove it (up to 1.6 s of one
//     Client's calls);
//   - the holder stops acting on the protected resource when its lease's
//     Context is done.
//
// A process pause (GC, swap, a stopped VM) can outlast the validity window
// without the holder noticing before it acts. No lock service can prevent
// that on its own; fencing tokens (WithFencing, Lease.Token) checked by the
// protected resource can. See docs/safety.md for the full discussion.
//
// # Reentrancy
//
// A Lock whose ctx carries an owner that already holds the lock re-enters
// it and returns a new Lease; each Lease is unlocked once. Pass a lease's
// Context down to code that may lock again, or name an owner explicitly
// with WithOwner to re-enter across goroutines and processes. Go has no
// thread id and this package never guesses one.
//
// # Renewal, waiting, modes
//
// With the watchdog (WithWatchdog, on by default) each Client renews its
// leases every TTL/3 in batches, and cancels a lease's Context when no
// quorum renewal lands in time. Lock does not poll: a refused waiter
// queues on the nodes, a release hands the lock to the first waiter and
// notifies it alone (over one Pub/Sub connection per node), and it claims
// the lock with one round; goroutines of one Client queue locally for a
// lock, in arrival order. WithFair orders waiters of
// all Clients by arrival; WithFencing gives every grant a token that is
// greater than that of any other owner's lease that ended before it was
// granted, while the assumptions above hold (see Lease.Token); Multi takes
// several mutexes, of one or several Clients, all or nothing.
package redlock
