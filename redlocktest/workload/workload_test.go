package workload

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun_everyModeSafeOnHealthyNodes(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	var clients []*redlock.Client
	for range 2 {
		c, err := redlock.New(cluster.Clients(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	check := checker.New()
	var stats Stats
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	Run(ctx, Config{Clients: clients, Workers: 3, Check: check}, &stats)
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if stats.LostUpdates.Load() != 0 || stats.Sections.Load() < 100 {
		t.Fatalf("sections %d, lost updates %d", stats.Sections.Load(), stats.LostUpdates.Load())
	}
	// Every lock mode is fenced: every grant carries a token, so the
	// checker's token rule covers every lock mode (a semaphore's permits
	// are held at once: no tokens).
	perName := map[string]int{}
	for _, g := range check.Grants() {
		if g.Token == 0 && g.Name != "semaphore:semaphore" && !g.Shared {
			t.Fatalf("grant of %s without a fencing token", g.Name)
		}
		perName[g.Name]++
	}
	for _, mode := range AllModes {
		for _, name := range Names(mode) {
			if perName[string(mode)+":"+name] == 0 {
				t.Errorf("no grant of %s:%s", mode, name)
			}
		}
	}
	t.Logf("%d sections, %d grants checked, per name %v", stats.Sections.Load(), check.Len(), perName)
}

// The lost-update detector must catch two writers working from one read,
// and the record must refuse a write with an older fencing token.
func TestRecord_detectsALostUpdate(t *testing.T) {
	var r record
	read := r.read()
	if _, lost := r.write(0, read, read+1); lost {
		t.Fatal("first write reported lost")
	}
	if _, lost := r.write(0, read, read+1); !lost {
		t.Fatal("a second write from the same read was not reported as a lost update")
	}
	if accepted, _ := r.write(5, r.read(), r.read()+1); !accepted {
		t.Fatal("fenced write refused")
	}
	if accepted, _ := r.write(4, r.read(), r.read()+1); accepted {
		t.Fatal("write with an older token accepted")
	}
}

// Every lock mode's lock is fenced, and the names match the records.
func TestLocker_everyModeFenced(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, mode := range AllModes {
		if mode == Semaphore {
			continue // permits are held at once: no tokens
		}
		var last uint64
		lock := Locker(c, mode, redlock.WithTTL(5*time.Second))
		for range 6 {
			lease, err := lock(t.Context())
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if reading(lease) { // RW: a read hold has no token
				if mode != RW || lease.Token() != 0 {
					t.Errorf("%s: a read lease with token %d", mode, lease.Token())
				}
			} else if lease.Token() <= last {
				t.Errorf("%s: token %d after %d", mode, lease.Token(), last)
			}
			last = lease.Token()
			if err := lease.Unlock(t.Context()); err != nil {
				t.Fatalf("%s: unlock: %v", mode, err)
			}
		}
		if len(Names(mode)) == 0 {
			t.Errorf("%s: no names", mode)
		}
	}
}

// The semaphore's record: SemaphorePermits holders with valid leases fill
// it, one more is over, and one leaving frees a place.
func TestHolders_overAtPermitsPlusOne(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h := &holders{}
	var leases []*redlock.Lease
	for i := range SemaphorePermits + 1 {
		lease, err := c.Mutex(fmt.Sprint("h", i), redlock.WithTTL(time.Second)).Lock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, lease)
	}
	for i, lease := range leases[:SemaphorePermits] {
		if h.enter(lease) {
			t.Fatalf("holder %d of %d reported over", i+1, SemaphorePermits)
		}
	}
	if !h.enter(leases[SemaphorePermits]) {
		t.Fatalf("holder %d of %d not reported over", SemaphorePermits+1, SemaphorePermits)
	}
	h.leave(leases[SemaphorePermits])
	_ = leases[0].Unlock(t.Context()) // its Until stays: leave is what frees its place
	h.leave(leases[0])
	if h.enter(leases[SemaphorePermits]) {
		t.Fatal("over after a holder left")
	}
	for _, lease := range leases[1:] {
		_ = lease.Unlock(t.Context())
	}
}

// A reader's section must catch a write made while its read lease is
// valid (a writer overlapping a reader), and not count one made before.
func TestReadSection_detectsAWriteUnderARead(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	lease, err := c.RWMutex("rw").RLock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(t.Context())
	stats := &Stats{}
	w := &Worker{Mode: RW, Hold: 50 * time.Millisecond, Stats: stats, Records: &Records{}, Names: Names(RW)}
	rw := w.Records.record("rw")
	rw.write(0, 0, 1) // before the section: fine
	w.section(lease, []*record{rw})
	if stats.LostUpdates.Load() != 0 || stats.Sections.Load() != 1 {
		t.Fatalf("a quiet read: %d lost, %d sections", stats.LostUpdates.Load(), stats.Sections.Load())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(20 * time.Millisecond)
		rw.write(0, 1, 2) // inside the read section
	}()
	w.section(lease, []*record{rw})
	<-done
	if stats.LostUpdates.Load() != 1 {
		t.Fatalf("a write during a valid read hold was not counted (%d)", stats.LostUpdates.Load())
	}
}
