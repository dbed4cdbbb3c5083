package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts what a client sends: single commands and pipelines.
type roundTrips struct{ singles, pipelines, piped atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.singles.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.pipelines.Add(1)
		r.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func TestBatcher_concurrentCallsShareRoundTrips(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	client := cluster.Clients(t)[0].(*redis.Client)
	counter := &roundTrips{}
	client.AddHook(counter)
	n := node.New(0, cluster.Addrs()[0], client)
	defer n.Wait()
	ctx := context.Background()
	if err := redlocktest.FlushScripts(ctx, cluster.Admin(t, 0)); err != nil {
		t.Fatal(err)
	}
	const callers = 200
	var wg sync.WaitGroup
	var granted atomic.Int64
	for i := range callers {
		wg.Go(func() {
			got, err := n.Acquire(ctx, nil, keysOf(fmt.Sprintf("k%d", i)), "o", "h", time.Second)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
				return
			}
			if got.Granted {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if granted.Load() != callers {
		t.Fatalf("%d of %d granted (the cache was flushed: NOSCRIPT must fall back to EVAL)", granted.Load(), callers)
	}
	trips := counter.singles.Load() + counter.pipelines.Load()
	t.Logf("%d calls: %d single commands, %d pipelines carrying %d", callers,
		counter.singles.Load(), counter.pipelines.Load(), counter.piped.Load())
	if trips >= callers {
		t.Fatalf("%d round trips for %d concurrent calls: no sharing", trips, callers)
	}
}

func TestBatcher_callerStopsWaitingAtItsDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	defer func() {
		_ = cluster.Servers[0].Resume()
		n.Wait()
	}()
	if err := cluster.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := n.Acquire(ctx, nil, keysOf("k"), "o", "h", time.Second)
	if err == nil || time.Since(start) > 400*time.Millisecond {
		t.Fatalf("call to a paused node: %v after %v; want an error at about the deadline", err, time.Since(start))
	}
}

// Calls queued to one node run in the order they were made, even when the
// node's script cache was flushed under them: a renewal queued before a
// release must not run after it and re-create the lock.
func TestBatcher_keepsOrderAcrossAFlushedCache(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) { keepsOrderAcrossAFlushedCache(t, mode) })
	}
}

// scriptModes are the two ways a node runs the scripts: as functions of
// the library (FCALL), and, where FUNCTION is refused, by EVALSHA; flush
// empties what each relies on.
type scriptMode struct {
	name   string
	client func(t *testing.T, cluster *redlocktest.Nodes) redis.UniversalClient
	flush  func(ctx context.Context, admin *redis.Client) error
	fcall  bool // the calls go as FCALL
}

var scriptModes = []scriptMode{
	{"functions", defaultClient, redlocktest.FlushScripts, true},
	{"functions flushed alone", defaultClient, // the script cache stays
		func(ctx context.Context, admin *redis.Client) error { return admin.FunctionFlush(ctx).Err() }, true},
	{"evalsha", func(t *testing.T, cluster *redlocktest.Nodes) redis.UniversalClient { return cluster.ScriptsOnly(t, 0) },
		func(ctx context.Context, admin *redis.Client) error { return admin.ScriptFlush(ctx).Err() }, false},
}

func defaultClient(t *testing.T, cluster *redlocktest.Nodes) redis.UniversalClient {
	return cluster.Clients(t)[0]
}

// used fails t unless the node ran the calls the way mode says.
func (mode scriptMode) used(t *testing.T, admin *redis.Client) {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if fcall := strings.Contains(info, "cmdstat_fcall:"); fcall != mode.fcall {
		t.Fatalf("FCALL used: %v; want %v (%s)", fcall, mode.fcall, mode.name)
	}
}

func keepsOrderAcrossAFlushedCache(t *testing.T, mode scriptMode) {
	cluster := redlocktest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], mode.client(t, cluster))
	defer func() {
		_ = cluster.Servers[0].Resume()
		n.Wait()
	}()
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	renewal := []node.Renewal{{Keys: keysOf("k"), Owner: "o", Hold: "h", TTL: 30 * time.Second}}
	if _, err := n.Acquire(ctx, nil, keysOf("k"), "o", "h", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the batcher now believes both scripts cached, or the library loaded
		if _, err := n.Renew(ctx, renewal); err != nil {
			t.Fatal(err)
		}
	}
	if err := mode.flush(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	// In flight: a script outside the library, so that the calls queued
	// behind it, not it, find the library gone.
	wg.Go(func() { _, _ = n.RaiseFence(ctx, "other:fence", 1) })
	time.Sleep(50 * time.Millisecond)
	var renewErr error
	wg.Go(func() { _, renewErr = n.Renew(ctx, renewal) })
	time.Sleep(50 * time.Millisecond)
	var released node.Released
	var releaseErr error
	wg.Go(func() { released, releaseErr = release(ctx, n, keysOf("k"), "o", "h", 0) })
	time.Sleep(50 * time.Millisecond)
	if err := cluster.Servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	exists, err := admin.Exists(ctx, "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if releaseErr == nil && released == node.LockDeleted && exists == 1 {
		t.Fatal("the release deleted the lock, then the renewal queued before it re-created it")
	}
	if mode.fcall {
		// Both calls found the library gone: both run again by EVAL, in
		// their order, the renewal first.
		if renewErr != nil || releaseErr != nil || released != node.LockDeleted || exists == 1 {
			t.Fatalf("renewal %v, release %v, %v, lock left %v; want both run again in order", renewErr, released,
				releaseErr, exists == 1)
		}
		if commandCalls(t, admin, "eval") < 2 {
			t.Fatal("no EVAL: the calls did not run again")
		}
	} else if !errors.Is(renewErr, node.ErrNotSent) || node.Answered(renewErr) {
		// The release's script was loaded with the pipeline and ran; the
		// renewal ahead of it found its script gone. It did not run, and
		// says so: not sent (so that a release in its place would be tried
		// again), not an answer.
		t.Fatalf("the renewal kept out of order: %v; want ErrNotSent", renewErr)
	}
	t.Logf("release: %v, %v; key exists: %v", released, releaseErr, exists == 1)
	mode.used(t, admin)
}

// A node that lost its script cache after the scripts were loaded (a
// restart, SCRIPT FLUSH) answers the calls of a pipeline NOSCRIPT: they did
// not run, and run again by EVAL; none fails.
func TestBatcher_pipelinedCallsSurviveAFlushedScriptCache(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) { pipelinedCallsSurviveAFlush(t, mode) })
	}
}

func pipelinedCallsSurviveAFlush(t *testing.T, mode scriptMode) {
	cluster := redlocktest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], mode.client(t, cluster))
	defer n.Wait()
	ctx := context.Background()
	// The first call asks for the library, the second loads it, the third
	// is an FCALL where Functions are allowed.
	for range 3 {
		if _, err := n.Acquire(ctx, nil, keysOf("loaded"), "o", "h", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	mode.used(t, cluster.Admin(t, 0))
	if err := mode.flush(ctx, cluster.Admin(t, 0)); err != nil {
		t.Fatal(err)
	}
	// Another script's call in flight to the paused node, so that the
	// acquires queue behind it and go out together, as one pipeline.
	if err := cluster.Servers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = n.RaiseFence(ctx, "other:fence", 1) }) // outside the library
	time.Sleep(50 * time.Millisecond)
	for i := range 200 {
		wg.Go(func() {
			got, err := n.Acquire(ctx, nil, keysOf(fmt.Sprintf("f%d", i)), "o", "h", time.Second)
			if err != nil || !got.Granted {
				t.Errorf("caller %d after the flush: %+v, %v", i, got, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if err := cluster.Servers[0].Resume(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
