package redlockotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	redlockotel "github.com/quorumlock/redlock/contrib/otel"
	"github.com/quorumlock/redlock/redlocktest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// traced is a Client over 3 real nodes whose calls go to in-memory spans
// and metrics.
type traced struct {
	client  *redlock.Client
	cluster *redlocktest.Nodes
	spans   *tracetest.SpanRecorder
	tracer  *sdktrace.TracerProvider
	metrics *sdkmetric.ManualReader
}

func newTraced(t *testing.T, opts ...redlock.Option) *traced {
	t.Helper()
	x := &traced{cluster: redlocktest.Start(t, 3), spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader()}
	x.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(x.spans))
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(x.metrics))
	t.Cleanup(func() { _ = x.tracer.Shutdown(context.Background()); _ = meters.Shutdown(context.Background()) })
	observer, err := redlockotel.NewObserver(redlockotel.WithTracerProvider(x.tracer), redlockotel.WithMeterProvider(meters))
	if err != nil {
		t.Fatal(err)
	}
	x.client, err = redlock.New(x.cluster.Clients(t), append(opts, redlock.WithObserver(observer))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.client.Close() })
	return x
}

// span is the one ended span named name.
func (x *traced) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range x.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %s, want 1", len(found), name)
	}
	return found[0]
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func TestObserver_aLocksSpanIsUnderTheCallersWithVotesAndWait(t *testing.T) {
	x := newTraced(t, redlock.WithFencing())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx, parent := x.tracer.Tracer("app").Start(ctx, "handle-order")
	lease, err := x.client.Mutex("order-7").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	lock := x.span(t, "redlock.Lock")
	if lock.Parent().SpanID() != parent.SpanContext().SpanID() || lock.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("the Lock span's parent is %v, want the caller's span %v", lock.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	if got := attr(lock, "redlock.name").AsString(); got != "order-7" {
		t.Fatalf("redlock.name %q", got)
	}
	if votes, quorum := attr(lock, "redlock.votes").AsInt64(), attr(lock, "redlock.quorum").AsInt64(); votes < quorum || quorum != 2 {
		t.Fatalf("votes %d, quorum %d: want a quorum of 2 reached", votes, quorum)
	}
	if wait := attr(lock, "redlock.wait_seconds").AsFloat64(); wait <= 0 {
		t.Fatalf("redlock.wait_seconds %v", wait)
	}
	if token := attr(lock, "redlock.token").AsInt64(); token <= 0 || uint64(token) != lease.Token() {
		t.Fatalf("redlock.token %d, the lease's %d", token, lease.Token())
	}
	if unlock := x.span(t, "redlock.Unlock"); unlock.Parent().SpanID() != parent.SpanContext().SpanID() || unlock.Status().Code == codes.Error {
		t.Fatalf("Unlock span: parent %v, status %v", unlock.Parent().SpanID(), unlock.Status())
	}
}

func TestObserver_refusalsAreAnswersAndFailuresAreErrors(t *testing.T) {
	x := newTraced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, err := x.client.Mutex("busy").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(ctx)
	if _, err := x.client.Mutex("busy").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	short, stop := context.WithTimeout(ctx, 150*time.Millisecond)
	defer stop()
	if _, err := x.client.Mutex("busy").Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock, ctx ending: %v", err)
	}
	try := x.span(t, "redlock.TryLock")
	if try.Status().Code == codes.Error || attr(try, "redlock.result").AsString() != "refused" {
		t.Fatalf("refused TryLock: status %v, result %q", try.Status(), attr(try, "redlock.result").AsString())
	}
	var cancelled sdktrace.ReadOnlySpan
	for _, s := range x.spans.Ended() {
		if s.Name() == "redlock.Lock" && attr(s, "redlock.result").AsString() == "cancelled" {
			cancelled = s
		}
	}
	if cancelled == nil || cancelled.Status().Code != codes.Error {
		t.Fatalf("the Lock whose ctx ended: %v", cancelled)
	}
}

func TestObserver_nodeErrorsAreEventsAndLeasesAreCounted(t *testing.T) {
	x := newTraced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.cluster.Servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	lease, err := x.client.Mutex("degraded").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held := sumOf(t, x.metrics, "redlock.leases.held"); held != 1 {
		t.Fatalf("redlock.leases.held %d while one lease is held", held)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lock := x.span(t, "redlock.Lock")
	events := 0
	for _, e := range lock.Events() {
		if e.Name == "redlock.node_error" {
			events++
		}
	}
	if events == 0 || attr(lock, "redlock.nodes_answered").AsInt64() != 2 {
		t.Fatalf("Lock with node 2 down: %d node_error events, %d nodes answered", events, attr(lock, "redlock.nodes_answered").AsInt64())
	}
	if held, errs := sumOf(t, x.metrics, "redlock.leases.held"), sumOf(t, x.metrics, "redlock.node.errors"); held != 0 || errs == 0 {
		t.Fatalf("after Unlock: leases.held %d, node.errors %d", held, errs)
	}
}

// sumOf is the sum over every series of the integer sum metric name.
func sumOf(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, scope := range rm.ScopeMetrics {
		for _, m := range scope.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range sum.DataPoints {
					total += p.Value
				}
			}
		}
	}
	return total
}
