package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// Candidates of several Clients campaign in turn: one leader at a time
// (the checker), terms strictly increasing, and Leader names each one
// while it leads.
func TestElection_oneLeaderAtATime_termsIncrease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	check := checker.New()
	const clients, rounds = 3, 6
	var wg sync.WaitGroup
	for i := range clients {
		e := newClient(t, cluster).Election("scheduler")
		value := string(rune('a' + i))
		wg.Go(func() {
			for range rounds {
				lease, err := e.Campaign(ctx, value)
				if err != nil {
					t.Errorf("Campaign: %v", err)
					return
				}
				acquired := time.Now()
				leader, err := e.Leader(ctx)
				if err != nil || leader.Value != value || leader.Term != lease.Token() {
					t.Errorf("Leader while %s leads with term %d = %+v, %v", value, lease.Token(), leader, err)
				}
				time.Sleep(time.Millisecond)
				record(check, "scheduler", lease, acquired)
				if err := lease.Unlock(context.Background()); err != nil {
					t.Errorf("resign: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if check.Len() != clients*rounds {
		t.Fatalf("%d terms, want %d", check.Len(), clients*rounds)
	}
	for _, g := range check.Grants() {
		if g.Token == 0 {
			t.Fatalf("a leader without a term: %+v", g)
		}
	}
	if _, err := newClient(t, cluster).Election("scheduler").Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader after every candidate resigned: %v; want ErrNoLeader", err)
	}
}

// Observe shows no leader, then each leader, and a leader that crashed
// (no renewal, no resignation) as a change to no leader at its TTL.
func TestElection_Observe_showsEachChangeAndALostLeader(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 500 * time.Millisecond
	watch, stop := context.WithCancel(ctx)
	defer stop()
	changes := newClient(t, cluster, redlock.WithTTL(ttl)).Election("primary").Observe(watch)
	next := func(what string) redlock.Leader {
		t.Helper()
		select {
		case leader, ok := <-changes:
			if !ok {
				t.Fatalf("Observe closed, waiting for %s", what)
			}
			return leader
		case <-time.After(5 * time.Second):
			t.Fatalf("no change within 5s, waiting for %s", what)
		}
		return redlock.Leader{}
	}
	if first := next("the current leader"); first != (redlock.Leader{}) {
		t.Fatalf("first = %+v; want no leader", first)
	}
	a, err := newClient(t, cluster, redlock.WithTTL(ttl)).Election("primary").Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := next("a"); got.Value != "a" || got.Term != a.Token() {
		t.Fatalf("after a's Campaign: %+v; want a, term %d", got, a.Token())
	}
	mustUnlock(t, a)
	if got := next("no leader after a resigned"); got != (redlock.Leader{}) {
		t.Fatalf("after a resigned: %+v; want no leader", got)
	}
	crashed := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithWatchdog(false)).Election("primary")
	b, err := crashed.Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := next("b"); got.Value != "b" || got.Term != b.Token() || b.Token() <= a.Token() {
		t.Fatalf("after b's Campaign: %+v; want b, term %d > %d", got, b.Token(), a.Token())
	}
	began := time.Now()
	if got := next("no leader after b crashed"); got != (redlock.Leader{}) {
		t.Fatalf("after b stopped renewing: %+v; want no leader", got)
	}
	if waited := time.Since(began); waited > ttl+time.Second {
		t.Fatalf("b's loss showed %v after its last change, TTL %v", waited, ttl)
	}
	stop()
	for range changes {
	}
}

// ForceUnlock takes leadership away: the leader's lease ends at its next
// renewal, and the next candidate leads with a higher term.
func TestElection_ForceUnlockEndsLeadership(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithTTL(600*time.Millisecond))
	old, err := c.Election("primary").Campaign(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ForceUnlock(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the old leader's lease did not end")
	}
	if !errors.Is(old.Err(), redlock.ErrLost) {
		t.Fatalf("old leader's Err = %v; want ErrLost", old.Err())
	}
	next, err := newClient(t, cluster).Election("primary").Campaign(ctx, "next")
	if err != nil {
		t.Fatal(err)
	}
	defer mustUnlock(t, next)
	if next.Token() <= old.Token() {
		t.Fatalf("term %d after %d", next.Token(), old.Token())
	}
}

func TestElection_badInputAndNoQuorum(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithNodeTimeout(200*time.Millisecond))
	for _, e := range []*redlock.Election{c.Election(""), c.Election("x", redlock.WithTTL(-time.Second))} {
		if _, err := e.Campaign(ctx, "v"); !errors.Is(err, redlock.ErrConfig) {
			t.Errorf("Campaign: %v; want ErrConfig", err)
		}
		if _, err := e.Leader(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Errorf("Leader: %v; want ErrConfig", err)
		}
		if _, ok := <-e.Observe(ctx); ok {
			t.Error("Observe of an invalid election sent a value")
		}
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := c.Election("x").Campaign(nil, "v"); !errors.Is(err, redlock.ErrConfig) { //nolint:staticcheck
		t.Errorf("nil ctx: %v; want ErrConfig", err)
	}
	// A record key of the wrong type: an error, not a panic, and no leader.
	for i := range 2 {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{typed}:leader", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if lease, err := c.Election("typed").Campaign(ctx, "v"); !errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, redlock.ErrKeyConflict) {
		t.Errorf("Campaign with the record a string on 2 of 3 nodes = %v, %v; want ErrNoQuorum, ErrKeyConflict", lease, err)
	}
	if info, err := c.Inspect(ctx, "typed"); err != nil || info.Held {
		t.Errorf("after the failed Campaign: held %v, %v; want the lock given back", info.Held, err)
	}
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Election("x").Leader(ctx); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Errorf("Leader with 2 of 3 nodes down: %v; want ErrNoQuorum", err)
	}
}

// The leader's value is published again while it leads: after every node
// lost it (restarted empty, one after another), Leader still names it.
func TestElection_Leader_afterARollingRestart(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 600 * time.Millisecond
	e := newClient(t, cluster, redlock.WithTTL(ttl)).Election("primary")
	lease, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rollingRestartEmpty(t, cluster, ttl)
	if lease.Err() != nil {
		t.Fatalf("leadership lost in a rolling restart: %v", lease.Err())
	}
	leader, err := newClient(t, cluster, redlock.WithTTL(ttl)).Election("primary").Leader(ctx)
	if err != nil || leader.Value != "a" || leader.Term != lease.Token() {
		t.Fatalf("Leader after the restart = %+v, %v; want a, term %d", leader, err, lease.Token())
	}
	mustUnlock(t, lease)
}
