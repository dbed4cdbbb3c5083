package redlock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

func TestClose_withWaitersAndLeasesInFlight(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c, err := redlock.New(cluster.Clients(t), redlock.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	held := mustLock(t, ctx, c.Mutex("busy"))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := c.Mutex("busy").Lock(ctx)
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Waiters must give up with ErrClosed, not wait for their ctx.
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("waiter after Close: %v, want ErrClosed", err)
		}
	}
	if !errors.Is(held.Err(), redlock.ErrClosed) || cluster.KeyCount(t) != 0 {
		t.Fatalf("held lease after Close: %v, %d keys left", held.Err(), cluster.KeyCount(t))
	}
}
