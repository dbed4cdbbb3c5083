// Package redlockprometheus exports a redlock Client's lock events as
// Prometheus metrics: a prometheus.Collector the caller registers on a
// Registerer of their choosing (never the default one behind their back).
//
//	metrics := redlockprometheus.NewCollector()
//	registry.MustRegister(metrics)
//	client, err := redlock.Dial(urls, redlock.WithObserver(metrics.Observer()))
//
// Series are labelled by lock name. Names made per job ("job-1234") grow a
// series each: WithoutLockLabel folds them into one.
package redlockprometheus

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/redlock"
)

// Collector holds the metrics; it is safe for concurrent use.
type Collector struct {
	lockLabel  bool
	calls      *prometheus.HistogramVec // lock, kind, op, result
	waiting    *prometheus.GaugeVec     // lock
	held       *prometheus.GaugeVec     // lock
	released   *prometheus.CounterVec   // lock, result
	renewed    *prometheus.CounterVec   // lock
	lost       *prometheus.CounterVec   // lock
	nodeErrors *prometheus.CounterVec   // node, addr
	quarantine *prometheus.CounterVec   // node, addr
}

// Option configures a Collector.
type Option func(*config)

type config struct {
	namespace string
	buckets   []float64
	lockLabel bool
}

// WithNamespace prefixes every metric's name (default "redlock").
func WithNamespace(namespace string) Option { return func(c *config) { c.namespace = namespace } }

// WithBuckets sets the call duration histogram's buckets, in seconds.
func WithBuckets(buckets []float64) Option { return func(c *config) { c.buckets = buckets } }

// WithoutLockLabel records every lock under lock="" (for names made per
// job or per request, which would each add series).
func WithoutLockLabel() Option { return func(c *config) { c.lockLabel = false } }

// NewCollector makes the metrics; register the Collector to export them.
func NewCollector(opts ...Option) *Collector {
	cfg := config{namespace: "redlock", lockLabel: true,
		buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)} // 0.5 ms to 131 s
	for _, opt := range opts {
		opt(&cfg)
	}
	ns := cfg.namespace
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, []string{"lock"})
	}
	return &Collector{
		lockLabel: cfg.lockLabel,
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "call_duration_seconds",
			Help:    "Lock, TryLock, Unlock, Extend and the like: time from the call to its end, by result (for Lock, the wait).",
			Buckets: cfg.buckets}, []string{"lock", "kind", "op", "result"}),
		waiting:    gauge("waiting", "Calls waiting for a lease now (Lock, RLock, Acquire, Campaign)."),
		held:       gauge("leases_held", "Leases this process holds now."),
		released:   counter("released_total", "Releases, by whether a quorum confirmed them.", "lock", "result"),
		renewed:    counter("renewed_total", "Renewals confirmed by a quorum.", "lock"),
		lost:       counter("lost_total", "Leases lost before they were released.", "lock"),
		nodeErrors: counter("node_errors_total", "Failed calls to a node.", "node", "addr"),
		quarantine: counter("quarantines_total", "Nodes found not to vote: data lost or clock fast.", "node", "addr"),
	}
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.calls, c.waiting, c.held, c.released, c.renewed, c.lost, c.nodeErrors, c.quarantine}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}

// lock is the lock label's value for name.
func (c *Collector) lock(name string) string {
	if c.lockLabel {
		return name
	}
	return ""
}

// Observer returns the hooks to give to redlock.WithObserver (with
// redlock.JoinObservers beside others).
func (c *Collector) Observer() redlock.Observer {
	return redlock.Observer{
		Call:     c.call,
		Acquired: func(e redlock.AcquiredEvent) { c.held.WithLabelValues(c.lock(e.Name)).Inc() },
		Released: func(e redlock.ReleasedEvent) {
			if !e.Lost {
				c.held.WithLabelValues(c.lock(e.Name)).Dec()
			}
			c.released.WithLabelValues(c.lock(e.Name), redlock.Outcome(e.Err)).Inc()
		},
		Renewed: func(e redlock.RenewedEvent) { c.renewed.WithLabelValues(c.lock(e.Name)).Inc() },
		Lost: func(e redlock.LostEvent) {
			c.held.WithLabelValues(c.lock(e.Name)).Dec()
			c.lost.WithLabelValues(c.lock(e.Name)).Inc()
		},
		NodeError: func(e *redlock.NodeError) {
			c.nodeErrors.WithLabelValues(strconv.Itoa(e.Node), e.Addr).Inc()
		},
		Quarantined: func(e redlock.QuarantineEvent) {
			c.quarantine.WithLabelValues(strconv.Itoa(e.Node), e.Addr).Inc()
		},
	}
}

// call times one call, and counts it as waiting while it may wait.
func (c *Collector) call(_ context.Context, e redlock.CallEvent) func(redlock.CallResult) {
	lock := c.lock(e.Name)
	waits := e.Op == "Lock" || e.Op == "RLock" || e.Op == "Acquire" || e.Op == "Campaign"
	if waits {
		c.waiting.WithLabelValues(lock).Inc()
	}
	return func(r redlock.CallResult) {
		if waits {
			c.waiting.WithLabelValues(lock).Dec()
		}
		c.calls.WithLabelValues(lock, e.Kind, e.Op, redlock.Outcome(r.Err)).Observe(r.Took.Seconds())
	}
}
