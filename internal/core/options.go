package core

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/quorumlock/redlock/node"
)

// Defaults: redlock's options.go documents each.
const (
	// DefaultTTL: see redlock.DefaultTTL, which documents it.
	DefaultTTL = 30 * time.Second
	// DefaultDriftFactor is the fraction of the TTL set aside for node
	// clocks running fast, as the Redlock paper suggests.
	DefaultDriftFactor = 0.01
	// DefaultNodeTimeout: see redlock.DefaultNodeTimeout, which documents it.
	DefaultNodeTimeout = 500 * time.Millisecond
	// DefaultKeyPrefix starts every key and channel the library uses.
	DefaultKeyPrefix = "redlock:"
	// MaxRestartGuard bounds WithRestartGuard: the longest TTL.
	MaxRestartGuard = MaxTTL
	// DefaultQueueTimeout: see redlock.DefaultQueueTimeout, which documents it.
	DefaultQueueTimeout = 5 * time.Second
)

// Bounds: redlock's options.go documents each.
const (
	// MaxTTL: see redlock.MaxTTL, which documents it.
	MaxTTL = 365 * 24 * time.Hour
	// MaxTimeout: see redlock.MaxTimeout, which documents it.
	MaxTimeout = MaxTTL
	// maxDriftFactor bounds the drift factor: from one half up, the drift
	// allowance would take half the TTL or more, leaving a validity window
	// under half of it. Clocks that far apart are a fault, not drift.
	maxDriftFactor = 0.5
)

// Option: see redlock.Option, which documents it.
type Option func(*Settings)

// Settings is the resolved configuration of one mutex. It is a value: each
// Mutex gets its own copy, so no option state is shared between calls.
type Settings struct {
	TTL          time.Duration
	Watchdog     bool
	Quorum       int // 0: a majority of the nodes
	DriftFactor  float64
	NodeTimeout  time.Duration
	Stretch      func(time.Duration) time.Duration // the Client's: see RoundTimeout
	Retry        func() backoff.BackOff
	Fair         bool
	QueueTimeout time.Duration
	Fencing      bool
	KeyPrefix    string
	Logger       *slog.Logger
	Observer     Observer
	TLS          *tls.Config // Dial's rediss:// nodes; nil: go-redis's default
	// RestartGuard: how long a node that lost its data does not vote;
	// guardSet false: the default (see WithRestartGuard).
	RestartGuard time.Duration
	GuardSet     bool
	// Risks: the risks WithAcceptedRisks accepted.
	Risks node.Risk
	// ClockOff: WithClockCheck(false).
	ClockOff bool
}

func DefaultSettings() Settings {
	return Settings{
		TTL:          DefaultTTL,
		Watchdog:     true,
		DriftFactor:  DefaultDriftFactor,
		NodeTimeout:  DefaultNodeTimeout,
		QueueTimeout: DefaultQueueTimeout,
		KeyPrefix:    DefaultKeyPrefix,
		Logger:       slog.New(slog.DiscardHandler),
	}
}

func (s Settings) With(opts []Option) Settings {
	for _, opt := range opts {
		if opt != nil {
			opt(&s)
		}
	}
	return s
}

// QuorumOf is the number of nodes that must agree, out of n.
func (s Settings) QuorumOf(n int) int {
	if s.Quorum == 0 {
		return n/2 + 1
	}
	return s.Quorum
}

// Validate checks the settings for n nodes.
func (s Settings) Validate(n int) error {
	// The ranges are written so that NaN fails them: every comparison with
	// NaN is false.
	switch {
	case !(s.TTL > 0 && s.TTL <= MaxTTL):
		return fmt.Errorf("%w: TTL must be in (0, %v], got %v", ErrConfig, MaxTTL, s.TTL)
	case !(s.DriftFactor >= 0 && s.DriftFactor < maxDriftFactor):
		return fmt.Errorf("%w: drift factor must be in [0, %v), got %v", ErrConfig, maxDriftFactor, s.DriftFactor)
	case Validity(s.TTL, 0, s.DriftFactor) <= 0:
		return fmt.Errorf("%w: TTL %v leaves no validity window after the drift allowance %v",
			ErrConfig, s.TTL, DriftAllowance(s.TTL, s.DriftFactor))
	case !(s.NodeTimeout > 0 && s.NodeTimeout <= MaxTimeout):
		return fmt.Errorf("%w: node timeout must be in (0, %v], got %v", ErrConfig, MaxTimeout, s.NodeTimeout)
	case !(s.QueueTimeout > 0 && s.QueueTimeout <= MaxTimeout):
		// Checked without WithFair too: a Mutex may turn it on.
		return fmt.Errorf("%w: queue timeout must be in (0, %v], got %v", ErrConfig, MaxTimeout, s.QueueTimeout)
	case s.Quorum < 0 || s.Quorum > n:
		return fmt.Errorf("%w: quorum %d out of range 1..%d", ErrConfig, s.Quorum, n)
	case s.Quorum != 0 && s.Quorum <= n/2:
		return fmt.Errorf("%w: quorum %d of %d nodes is not a majority: two owners could hold the lock at once",
			ErrConfig, s.Quorum, n)
	case s.Logger == nil:
		return fmt.Errorf("%w: nil logger", ErrConfig)
	case !(s.RestartGuard >= 0 && s.RestartGuard <= MaxRestartGuard):
		return fmt.Errorf("%w: restart guard must be in [0, %v], got %v", ErrConfig, MaxRestartGuard, s.RestartGuard)
	case s.GuardSet && s.RestartGuard > 0 && s.RestartGuard < s.TTL:
		return fmt.Errorf("%w: restart guard %v is shorter than the TTL %v: a node that forgot a lease would vote "+
			"before the lease ends (0 turns the guard off)", ErrConfig, s.RestartGuard, s.TTL)
	}
	return nil
}

// WithRestartGuard implements redlock.WithRestartGuard, which documents it.
func WithRestartGuard(d time.Duration) Option {
	return func(s *Settings) { s.RestartGuard, s.GuardSet = d, true }
}

// WithAcceptedRisks implements redlock.WithAcceptedRisks, which documents it.
func WithAcceptedRisks(risks ...node.Risk) Option {
	return func(s *Settings) {
		for _, r := range risks {
			s.Risks |= r
		}
	}
}

// WithClockCheck implements redlock.WithClockCheck, which documents it.
func WithClockCheck(on bool) Option { return func(s *Settings) { s.ClockOff = !on } }

// ClockCheck is the node-level form of the clock check of these settings.
func (s Settings) ClockCheck() node.ClockCheck {
	if s.ClockOff {
		return node.ClockCheck{}
	}
	return node.ClockCheck{MaxRate: 1 + s.DriftFactor, Hold: s.TTL}
}

// WithTTL implements redlock.WithTTL, which documents it.
func WithTTL(ttl time.Duration) Option { return func(s *Settings) { s.TTL = ttl } }

// WithWatchdog implements redlock.WithWatchdog, which documents it.
func WithWatchdog(on bool) Option { return func(s *Settings) { s.Watchdog = on } }

// WithQuorum implements redlock.WithQuorum, which documents it.
func WithQuorum(k int) Option {
	return func(s *Settings) {
		s.Quorum = k
		if k == 0 {
			s.Quorum = -1 // 0 means "default" inside settings; an explicit 0 is invalid
		}
	}
}

// WithDriftFactor implements redlock.WithDriftFactor, which documents it.
func WithDriftFactor(factor float64) Option { return func(s *Settings) { s.DriftFactor = factor } }

// WithNodeTimeout implements redlock.WithNodeTimeout, which documents it.
func WithNodeTimeout(d time.Duration) Option { return func(s *Settings) { s.NodeTimeout = d } }

// WithRetry implements redlock.WithRetry, which documents it.
func WithRetry(newBackOff func() backoff.BackOff) Option {
	return func(s *Settings) { s.Retry = newBackOff }
}

// WithFair makes the mutex fair: waiters get the lock in arrival order.
func WithFair() Option { return func(s *Settings) { s.Fair = true } }

// WithQueueTimeout implements redlock.WithQueueTimeout, which documents it.
func WithQueueTimeout(d time.Duration) Option { return func(s *Settings) { s.QueueTimeout = d } }

// WithFencing implements redlock.WithFencing, which documents it.
func WithFencing() Option { return func(s *Settings) { s.Fencing = true } }

// WithKeyPrefix implements redlock.WithKeyPrefix, which documents it.
func WithKeyPrefix(prefix string) Option { return func(s *Settings) { s.KeyPrefix = prefix } }

// WithLogger implements redlock.WithLogger, which documents it.
func WithLogger(logger *slog.Logger) Option { return func(s *Settings) { s.Logger = logger } }

// WithObserver sets hooks called on lock events, for metrics.
func WithObserver(observer Observer) Option { return func(s *Settings) { s.Observer = observer } }

// WithTLS implements redlock.WithTLS, which documents it.
func WithTLS(config *tls.Config) Option { return func(s *Settings) { s.TLS = config } }

// RoundTimeout is how long a fan-out round may take: the node timeout,
// stretched for nodes far away (Client.stretch).
func (s *Settings) RoundTimeout() time.Duration {
	if s.Stretch == nil {
		return s.NodeTimeout
	}
	return s.Stretch(s.NodeTimeout)
}
