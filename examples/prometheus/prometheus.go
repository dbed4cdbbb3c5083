// Package prometheus adapts redlock's Observer hooks to Prometheus metrics.
// It lives in the examples module so the library itself depends on no
// metrics system.
//
//	metrics := prometheus.NewMetrics(prom.DefaultRegisterer)
//	client, _ := redlock.Dial(urls, redlock.WithObserver(metrics.Observer()))
package prometheus

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/redlock"
)

// Metrics are the lock metrics, labelled by lock name (keep names few: one
// series per name).
type Metrics struct {
	Acquired   *prometheus.CounterVec
	Wait       *prometheus.HistogramVec
	Released   *prometheus.CounterVec
	Renewed    *prometheus.CounterVec
	Lost       *prometheus.CounterVec
	NodeErrors *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Acquired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_acquired_total", Help: "Leases granted."}, []string{"lock"}),
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redlock_wait_seconds", Help: "Time from Lock to grant.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"lock"}),
		Released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_released_total", Help: "Unlocks, by whether they reached a quorum."}, []string{"lock", "ok"}),
		Renewed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_renewed_total", Help: "Renewals confirmed by a quorum."}, []string{"lock"}),
		Lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_lost_total", Help: "Leases lost before release."}, []string{"lock"}),
		NodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_node_errors_total", Help: "Failed calls to a node."}, []string{"node", "addr"}),
	}
	reg.MustRegister(m.Acquired, m.Wait, m.Released, m.Renewed, m.Lost, m.NodeErrors)
	return m
}

// Observer returns the hooks to give to redlock.WithObserver.
func (m *Metrics) Observer() redlock.Observer {
	return redlock.Observer{
		Acquired: func(e redlock.AcquiredEvent) {
			m.Acquired.WithLabelValues(e.Name).Inc()
			m.Wait.WithLabelValues(e.Name).Observe(e.Wait.Seconds())
		},
		Released: func(e redlock.ReleasedEvent) {
			m.Released.WithLabelValues(e.Name, strconv.FormatBool(e.Err == nil)).Inc()
		},
		Renewed: func(e redlock.RenewedEvent) { m.Renewed.WithLabelValues(e.Name).Inc() },
		Lost:    func(e redlock.LostEvent) { m.Lost.WithLabelValues(e.Name).Inc() },
		NodeError: func(e *redlock.NodeError) {
			m.NodeErrors.WithLabelValues(strconv.Itoa(e.Node), e.Addr).Inc()
		},
	}
}
