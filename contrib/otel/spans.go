package redlockotel

import (
	"context"
	"math"
	"strconv"

	"github.com/quorumlock/redlock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// waits reports whether op may wait for a lease.
func waits(op string) bool {
	return op == "Lock" || op == "RLock" || op == "Acquire" || op == "Campaign"
}

// call starts the span of a call under ctx's, and returns what ends it.
func (o *observer) call(ctx context.Context, e redlock.CallEvent) func(redlock.CallResult) {
	_, span := o.tracer.Start(ctx, "redlock."+e.Op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("redlock.name", e.Name), attribute.String("redlock.kind", e.Kind),
			attribute.String("redlock.mode", e.Mode), attribute.Int("redlock.nodes", e.Nodes),
			attribute.Int("redlock.quorum", e.Quorum)))
	o.mu.Lock()
	o.open[span] = struct{}{}
	o.mu.Unlock()
	if waits(e.Op) {
		o.metrics.waiting.Add(ctx, 1, o.lock(e.Name))
	}
	return func(r redlock.CallResult) {
		o.mu.Lock()
		delete(o.open, span)
		o.mu.Unlock()
		if waits(e.Op) {
			o.metrics.waiting.Add(ctx, -1, o.lock(e.Name))
		}
		outcome := redlock.Outcome(r.Err)
		o.metrics.calls.Record(ctx, r.Took.Seconds(), metric.WithAttributes(
			o.lockAttr(e.Name), attribute.String("redlock.kind", e.Kind),
			attribute.String("redlock.op", e.Op), attribute.String("redlock.result", outcome)))
		span.SetAttributes(attribute.String("redlock.result", outcome),
			attribute.Float64("redlock.wait_seconds", r.Took.Seconds()), attribute.Int("redlock.attempts", r.Attempts),
			attribute.Int("redlock.votes", r.Votes), attribute.Int("redlock.nodes_answered", r.Answered))
		if r.Token > 0 {
			span.SetAttributes(attribute.Int64("redlock.token", int64(min(r.Token, math.MaxInt64))))
		}
		if r.Err != nil && outcome != "refused" {
			// A refusal is an answer; anything else failed.
			span.RecordError(r.Err)
			span.SetStatus(codes.Error, r.Err.Error())
		}
		span.End()
	}
}

// inFlight adds an event to the span of every call in flight.
func (o *observer) inFlight(name string, attrs ...attribute.KeyValue) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for span := range o.open {
		span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

func (o *observer) nodeError(e *redlock.NodeError) {
	node := []attribute.KeyValue{attribute.String("redlock.node", strconv.Itoa(e.Node)), attribute.String("redlock.addr", e.Addr)}
	o.metrics.nodeErrors.Add(context.Background(), 1, metric.WithAttributes(node...))
	o.inFlight("redlock.node_error", append(node, attribute.String("exception.message", e.Err.Error()))...)
}

func (o *observer) quarantined(e redlock.QuarantineEvent) {
	node := []attribute.KeyValue{attribute.String("redlock.node", strconv.Itoa(e.Node)), attribute.String("redlock.addr", e.Addr)}
	o.metrics.quarantines.Add(context.Background(), 1, metric.WithAttributes(node...))
	o.inFlight("redlock.quarantine", append(node, attribute.String("redlock.reason", e.Reason.Error()),
		attribute.String("redlock.until", e.Until.UTC().Format("2006-01-02T15:04:05.000Z07:00")))...)
}

func (o *observer) released(e redlock.ReleasedEvent) {
	if !e.Lost {
		o.metrics.held.Add(context.Background(), -1, o.lock(e.Name))
	}
}

func (o *observer) lost(e redlock.LostEvent) {
	o.metrics.held.Add(context.Background(), -1, o.lock(e.Name))
	o.metrics.lost.Add(context.Background(), 1, o.lock(e.Name))
}

// lockAttr is the lock name's attribute for metrics ("" WithoutLockNames).
func (o *observer) lockAttr(name string) attribute.KeyValue {
	if !o.lockNames {
		name = ""
	}
	return attribute.String("redlock.name", name)
}

// lock is lockAttr as a measurement option.
func (o *observer) lock(name string) metric.MeasurementOption {
	return metric.WithAttributes(o.lockAttr(name))
}
