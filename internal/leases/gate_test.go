package leases

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/core"
)

func TestGates_fifoAndReentry(t *testing.T) {
	var g Gates
	ctx := context.Background()
	never := make(chan struct{})
	if err := g.Enter(ctx, never, "L", "a", true); err != nil {
		t.Fatal(err)
	}
	if err := g.Enter(ctx, never, "L", "a", false); err != nil {
		t.Fatalf("the owner at the head must pass again (reentrancy): %v", err)
	}
	if err := g.Enter(ctx, never, "L", "b", false); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("another owner without waiting: %v, want core.ErrNotAcquired", err)
	}
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, owner := range []string{"b", "c", "d"} {
		wg.Go(func() {
			if err := g.Enter(ctx, never, "L", owner, true); err != nil {
				t.Errorf("%s: %v", owner, err)
				return
			}
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
			g.Exit("L")
		})
		time.Sleep(10 * time.Millisecond) // arrive in this order
	}
	g.Exit("L")
	time.Sleep(10 * time.Millisecond)
	mu.Lock()
	if len(order) != 0 {
		t.Fatalf("%v entered while a still held one entry", order)
	}
	mu.Unlock()
	g.Exit("L")
	wg.Wait()
	if got := order; len(got) != 3 || got[0] != "b" || got[1] != "c" || got[2] != "d" {
		t.Fatalf("entered in order %v, want [b c d]", got)
	}
	if len(g.byName) != 0 {
		t.Fatalf("gate left behind: %v", g.byName)
	}
}

func TestGates_cancelledWaiterPassesTheTurnOn(t *testing.T) {
	var g Gates
	never := make(chan struct{})
	if err := g.Enter(context.Background(), never, "L", "a", true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- g.Enter(ctx, never, "L", "b", true) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	g.Exit("L")
	if err := g.Enter(context.Background(), never, "L", "c", false); err != nil {
		t.Fatalf("gate not free after the holder left and the waiter gave up: %v", err)
	}
	closed := make(chan struct{})
	close(closed)
	if err := g.Enter(context.Background(), closed, "L", "d", true); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("waiter of a closed client: %v, want core.ErrClosed", err)
	}
}
