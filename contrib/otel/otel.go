// Package redlockotel reports a redlock Client's calls as OpenTelemetry
// spans and metrics. It uses the OpenTelemetry API only: the application
// chooses the SDK and exporters, and passes their providers (the global
// ones by default).
//
//	observer, err := redlockotel.NewObserver()
//	client, err := redlock.Dial(urls, redlock.WithObserver(observer))
//
// Each Lock, TryLock, RLock, Acquire, Campaign, Unlock and Extend is a span
// under the span of the ctx it was given, named "redlock.<Op>", with the
// lock's name, kind and mode, the nodes and the quorum, and at its end the
// votes, the nodes that answered, the rounds, the wait and the fencing
// token. Node errors and quarantines are events on the spans of the calls
// in flight when they happen. Renewals and losses happen outside any call:
// they are metrics.
package redlockotel

import (
	"context"
	"sync"

	"github.com/quorumlock/redlock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName names this package's tracer and meter.
const ScopeName = "github.com/quorumlock/redlock/contrib/otel"

// Option configures NewObserver.
type Option func(*config)

type config struct {
	tracers   trace.TracerProvider
	meters    metric.MeterProvider
	lockNames bool
}

// WithTracerProvider sets where spans go (default: otel.GetTracerProvider()).
func WithTracerProvider(provider trace.TracerProvider) Option {
	return func(c *config) { c.tracers = provider }
}

// WithMeterProvider sets where metrics go (default: otel.GetMeterProvider()).
func WithMeterProvider(provider metric.MeterProvider) Option {
	return func(c *config) { c.meters = provider }
}

// WithoutLockNames leaves the lock's name out of metrics' attributes (for
// names made per job or per request); spans keep it.
func WithoutLockNames() Option { return func(c *config) { c.lockNames = false } }

// observer holds the instruments and the spans of calls in flight.
type observer struct {
	tracer    trace.Tracer
	lockNames bool
	metrics   instruments
	mu        sync.Mutex
	open      map[trace.Span]struct{}
}

// NewObserver returns the hooks to give to redlock.WithObserver (with
// redlock.JoinObservers beside others). It fails when an instrument cannot
// be made.
func NewObserver(opts ...Option) (redlock.Observer, error) {
	cfg := config{lockNames: true}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.tracers == nil {
		cfg.tracers = otel.GetTracerProvider()
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	o := &observer{tracer: cfg.tracers.Tracer(ScopeName), lockNames: cfg.lockNames, open: map[trace.Span]struct{}{}}
	var err error
	if o.metrics, err = newInstruments(cfg.meters.Meter(ScopeName)); err != nil {
		return redlock.Observer{}, err
	}
	return redlock.Observer{
		Call:        o.call,
		Acquired:    func(e redlock.AcquiredEvent) { o.metrics.held.Add(context.Background(), 1, o.lock(e.Name)) },
		Released:    o.released,
		Renewed:     func(e redlock.RenewedEvent) { o.metrics.renewed.Add(context.Background(), 1, o.lock(e.Name)) },
		Lost:        o.lost,
		NodeError:   o.nodeError,
		Quarantined: o.quarantined,
	}, nil
}
