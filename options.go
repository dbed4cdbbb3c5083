package redlock

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
)

// Defaults. Given to New, options replace them for every Mutex of the
// Client; given to Mutex, they replace them for that mutex only.
const (
	// DefaultTTL is how long a lease lives on the nodes without renewal. Long
	// enough that a renewal every TTL/3 survives a few slow rounds, short
	// enough that a crashed holder blocks others for half a minute at most.
	DefaultTTL = core.DefaultTTL
	// DefaultNodeTimeout bounds each call to one node. A slow or paused node
	// costs a round at most this much, and it is small against DefaultTTL so
	// that a round leaves most of the validity window.
	DefaultNodeTimeout = core.DefaultNodeTimeout
	// DefaultKeyPrefix starts every key and channel the library uses.
	DefaultKeyPrefix = core.DefaultKeyPrefix
	// MaxRestartGuard bounds WithRestartGuard: the longest TTL.
	MaxRestartGuard = core.MaxRestartGuard
	// DefaultQueueTimeout is how long a fair-mode waiter keeps its place in
	// the queue without a heartbeat.
	DefaultQueueTimeout = core.DefaultQueueTimeout
)

// Bounds. Every option value outside them makes New return ErrConfig, or
// makes the Mutex's Lock and TryLock return it.
const (
	// MaxTTL is the longest TTL WithTTL accepts: a year. No lock needs to
	// outlive its holder longer, and the bound keeps every computation on a
	// TTL far from overflow: the round-up to whole milliseconds for PEXPIRE
	// (time.Duration ends near 292 years), TTL*driftFactor in float64,
	// time.Time arithmetic on Until, the Lua doubles that carry it (exact
	// up to 2^53 ms, some 285,000 years) and Redis adding it to its
	// millisecond clock.
	MaxTTL = core.MaxTTL
	// MaxTimeout is the longest node timeout (WithNodeTimeout) and queue
	// timeout (WithQueueTimeout) accepted, MaxTTL for the same reasons: the
	// queue timeout goes to the nodes in milliseconds and the fair-mode
	// script adds it to the node's clock and doubles it.
	MaxTimeout = core.MaxTimeout
)

// Option configures a Client (given to New or Dial) or one Mutex (given to
// Client.Mutex). An invalid option makes New return ErrConfig, or makes the
// Mutex's Lock and TryLock return it.
type Option = core.Option

// WithRestartGuard sets d, how long a node that may have forgotten a lease
// does not vote: d after its start when it restarted without an
// append-only file, after a flush or a failover seen (see
// docs/restart-guard.md). d must be at least the TTL (else ErrConfig) and
// should be the longest TTL of any lease on the same names; each node
// records the longest d asked of it and uses that. The default is the
// longest TTL this Client has used when the Mutex is made; 0 turns the
// guard off. A node started less than d ago votes
// at once only when declared new (`redlock init`).
func WithRestartGuard(d time.Duration) Option {
	return core.WithRestartGuard(d)
}

// Risk is an assumption the restart guard cannot check on a node. By
// default such a node refuses to vote, naming the remedy; see
// WithAcceptedRisks.
type Risk = node.Risk

const (
	// RiskNoInfo: the lock's user may not run INFO (an ACL without +info).
	// Accepted, the node trusts its marker: a restart from a snapshot or a
	// failover to a replica that missed a grant is not seen.
	RiskNoInfo = node.RiskNoInfo
	// RiskEviction: the node has maxmemory and an evicting policy
	// (volatile-*, allkeys-*), which may evict a lock key while the
	// marker stays. Accepted, the node votes all the same.
	RiskEviction = node.RiskEviction
)

// WithAcceptedRisks lets nodes vote where the restart guard cannot see a
// loss, for a user who accepts that such a loss can grant a lock twice.
// The default accepts none: Lock fails at once (ErrQuarantined, and
// ErrNoQuorum when no quorum can vote) with the cause and its remedy.
func WithAcceptedRisks(risks ...Risk) Option {
	return core.WithAcceptedRisks(risks...)
}

// WithTTL sets how long a lease lives on the nodes without renewal
// (default DefaultTTL). It must be in (0, MaxTTL] and longer than its drift
// allowance (TTL*driftFactor + 2ms).
func WithTTL(ttl time.Duration) Option {
	return core.WithTTL(ttl)
}

// WithWatchdog turns automatic renewal every TTL/3 on or off (default on).
// Off, a lease lives its TTL unless Lease.Extend renews it.
func WithWatchdog(on bool) Option {
	return core.WithWatchdog(on)
}

// WithQuorum sets how many nodes must agree (default N/2+1). k must be a
// majority of the nodes (N/2 < k <= N); k = N makes every node necessary, as
// Redisson's MultiLock does.
func WithQuorum(k int) Option {
	return core.WithQuorum(k)
}

// WithNodeTimeout bounds each call to one node (default DefaultNodeTimeout,
// in (0, MaxTimeout]). go-redis honours it for clients made with
// ContextTimeoutEnabled (Dial does so); with other clients a round still
// returns on time, but a stuck call runs on until the client's own
// ReadTimeout.
func WithNodeTimeout(d time.Duration) Option {
	return core.WithNodeTimeout(d)
}

// WithRetry sets the backoff Lock waits between attempts when no release
// notice comes (default: wait for the holder's remaining TTL, and back off
// exponentially from 50 ms up to 2 s, each wait ±50 % at random, when the
// nodes report none). The function is called once per Lock, so each call
// gets a fresh BackOff.
func WithRetry(newBackOff func() backoff.BackOff) Option {
	return core.WithRetry(newBackOff)
}

// WithFair makes the mutex fair: waiters get the lock in arrival order.
func WithFair() Option {
	return core.WithFair()
}

// WithQueueTimeout sets how long a fair-mode waiter keeps its place without
// a heartbeat (default DefaultQueueTimeout), in (0, MaxTimeout]; a plain
// waiter keeps it for the TTL plus this. A crashed waiter is passed over
// once its place lapsed; a lock handed to a waiter is kept for it at most
// this long (or the TTL, when shorter: the span of a lease it takes from
// the handoff notices).
func WithQueueTimeout(d time.Duration) Option {
	return core.WithQueueTimeout(d)
}

// WithFencing makes every grant carry a fencing token (Lease.Token): when
// a lease of one owner ended (Until passed, or Unlock began) before a
// lease of another owner was granted, the later token is greater, while
// the lock's own assumptions hold; tokens of overlapping holds of one
// owner are not ordered. It costs one round trip more per grant (two for a
// lease adopted from the handoff notices). Tokens are about the nodes'
// clocks in microseconds, so that they keep increasing when nodes restart
// empty after the TTL: compare them, do not count with them.
// See docs/safety.md, "Fencing tokens" and "Why fencing tokens increase".
func WithFencing() Option {
	return core.WithFencing()
}

// WithKeyPrefix sets the prefix of every key and channel (default
// DefaultKeyPrefix). The lock name goes into a hash tag after it, so all
// keys of one lock share a Redis Cluster slot.
func WithKeyPrefix(prefix string) Option {
	return core.WithKeyPrefix(prefix)
}

// WithLogger sets where lost leases and node faults are logged (default:
// nowhere). Like Observer hooks, its handler runs on the library's
// goroutines, at times with a lease's renewal in progress: it must not
// block on anything that waits for an Unlock.
func WithLogger(logger *slog.Logger) Option {
	return core.WithLogger(logger)
}

// WithObserver sets hooks called on lock events, for metrics.
func WithObserver(observer Observer) Option {
	return core.WithObserver(observer)
}

// WithTLS sets the TLS configuration Dial uses for rediss:// nodes (for a
// private CA: RootCAs; for client certificates: Certificates). Each node
// gets a clone whose ServerName, when empty, is the URL's host. It has no
// effect on New, whose clients carry their own TLS settings.
func WithTLS(config *tls.Config) Option {
	return core.WithTLS(config)
}
