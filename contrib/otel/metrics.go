package redlockotel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the metrics NewObserver records.
type instruments struct {
	calls       metric.Float64Histogram
	waiting     metric.Int64UpDownCounter
	held        metric.Int64UpDownCounter
	renewed     metric.Int64Counter
	lost        metric.Int64Counter
	nodeErrors  metric.Int64Counter
	quarantines metric.Int64Counter
}

func newInstruments(meter metric.Meter) (instruments, error) {
	var i instruments
	var errs [7]error
	i.calls, errs[0] = meter.Float64Histogram("redlock.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Lock, TryLock, Unlock, Extend and the like: time from the call to its end (for Lock, the wait)."))
	i.waiting, errs[1] = meter.Int64UpDownCounter("redlock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for a lease now."))
	i.held, errs[2] = meter.Int64UpDownCounter("redlock.leases.held", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases held now."))
	i.renewed, errs[3] = meter.Int64Counter("redlock.renewals", metric.WithUnit("{renewal}"),
		metric.WithDescription("Renewals confirmed by a quorum."))
	i.lost, errs[4] = meter.Int64Counter("redlock.losses", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases lost before they were released."))
	i.nodeErrors, errs[5] = meter.Int64Counter("redlock.node.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failed calls to a node."))
	i.quarantines, errs[6] = meter.Int64Counter("redlock.node.quarantines", metric.WithUnit("{quarantine}"),
		metric.WithDescription("Nodes found not to vote: data lost or clock fast."))
	return i, errors.Join(errs[:]...)
}
