package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// restartMajorityWhileHeld runs two clients on one name: a holds the lock,
// then a majority of the nodes restarts, after waitBeforeRestart, either
// empty (breaking the assumption that a quorum keeps its keys) or with
// their data; b then tries to take the lock. It returns the checker's
// verdict.
func restartMajorityWhileHeld(t *testing.T, keepData bool, ttl time.Duration, extra ...redlock.Option) *checker.Checker {
	t.Helper()
	cluster := redlocktest.Start(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	ctx := testContext(t)
	check := checker.New()
	opts := append([]redlock.Option{redlock.WithTTL(ttl), redlock.WithWatchdog(false)}, extra...)
	a, b := newClient(t, cluster, opts...), newClient(t, cluster, opts...)

	held := mustLock(t, ctx, a.Mutex("record"))
	heldSince := time.Now()
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(keepData); err != nil {
			t.Fatal(err)
		}
	}
	if other, err := tryReaching(ctx, b.Mutex("record")); err == nil {
		record(check, "record", other, time.Now())
		mustUnlock(t, other)
	} else {
		t.Logf("second owner's TryLock: %v", err)
	}
	record(check, "record", held, heldSince)
	_ = held.Unlock(ctx)
	return check
}

// tryReaching is TryLock, tried again for up to 3 s while too few nodes
// answer: b's Client may have seen a node refuse connections while it
// restarted, and skips it until its next ping (node.ErrNotSent).
func tryReaching(ctx context.Context, m *redlock.Mutex) (*redlock.Lease, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		lease, err := m.TryLock(ctx)
		if err == nil || !errors.Is(err, redlock.ErrNoQuorum) || time.Now().After(deadline) {
			return lease, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The checker must catch a real violation: with a majority restarted empty
// while a lease is held and the restart guard off, a second owner gets the
// lock during the first owner's validity window. (With the guard on, the
// default, it does not: TestGuard_majorityRestartedEmptyWhileHeld.)
func TestChecker_catchesMajorityRestartedEmpty(t *testing.T) {
	check := restartMajorityWhileHeld(t, false, 10*time.Second, redlock.WithRestartGuard(0))
	err := check.Err()
	if err == nil || !strings.Contains(err.Error(), "overlapping grants") {
		t.Fatalf("checker verdict %v: it must report the two overlapping owners", err)
	}
}

// The same restart with the data kept (AOF, appendfsync always) is safe.
func TestChecker_cleanWhenRestartKeepsData(t *testing.T) {
	check := restartMajorityWhileHeld(t, true, 10*time.Second)
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if check.Len() != 1 {
		t.Fatalf("%d grants recorded, want only the first owner's", check.Len())
	}
}
