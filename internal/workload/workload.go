// Package workload is the contention workload of the demo and the chaos
// suites: workers of several Clients take locks in every mode (plain, fair,
// fenced, Multi) and do read–sleep–write on a shared record under each,
// Jepsen's lock-set idea: two holders at once lose an update. Every lock
// mode takes its lock WithFencing: each record refuses a token older than
// one it saw, as a storage system should, and the safety checker, which
// gets every grant with its token, checks that tokens increase in every
// mode. The Election mode campaigns in an election: a leader is a holder,
// its term the token. The Semaphore mode takes a permit of a semaphore of
// SemaphorePermits: its record counts the holders inside, and the checker
// allows that many grants at once and no more. The RW mode takes a
// read-write lock, two reads to a write: a reader reads its record twice,
// and a change between the reads made while its lease was valid is a lost
// update (a writer wrote under a read hold); the checker lets read holds
// overlap each other, never a writer's.
// All workers run in one process, so the checker compares times on one
// monotonic clock.
package workload

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/checker"
	"github.com/quorumlock/redlock/node"
)

// Mode is how a worker takes its lock.
type Mode string

// The modes. Each has its own lock names, and every one is fenced
// (redlock.WithFencing): Plain is a plain mutex, Fair one WithFair, Multi
// two mutexes under one Multi lease, whose token is its first part's.
// Fenced is Plain's twin under a name of its own: fencing was once its
// alone, and it stays so that the mode list and the lock names stay as
// they were.
const (
	Plain     Mode = "plain"
	Fair      Mode = "fair"
	Fenced    Mode = "fenced"
	Multi     Mode = "multi"
	Election  Mode = "election"
	Semaphore Mode = "semaphore"
	RW        Mode = "rw"
)

// SemaphorePermits is the count of the Semaphore mode's semaphore: fewer
// than the workers of a chaos run, so that they contend.
const SemaphorePermits = 2

// AllModes lists every mode.
var AllModes = []Mode{Plain, Fair, Fenced, Multi, Election, Semaphore, RW}

// Config describes a run.
type Config struct {
	Clients []*redlock.Client // workers are spread over them round-robin
	Workers int               // per mode
	Modes   []Mode            // default AllModes
	Hold    time.Duration     // the sleep between read and write (default 1ms)
	Check   *checker.Checker  // required
	// Options are given to every Mutex (e.g. a short TTL for chaos runs).
	Options []redlock.Option
}

// Stats are the counts of a run, safe to read while it runs.
type Stats struct {
	Sections    atomic.Int64 // writes made under a valid lease
	LostUpdates atomic.Int64 // sections whose write did not land on top of the read; for a semaphore, sections entered with every permit's holder inside and valid
	Fenced      atomic.Int64 // stale writes the record refused by fencing token
	LostLeases  atomic.Int64 // leases found lost before the write: no write made
	LockErrors  atomic.Int64 // Lock calls that failed before the run ended
}

// record is the shared resource of one lock name. It checks fencing
// tokens like a storage system should, and counts lost updates.
type record struct {
	mu      sync.Mutex
	value   int64
	highest uint64
}

// write stores value (read earlier as value-1) unless token is older than
// one already seen; it reports whether the write was accepted and whether
// an update was lost (the value moved since the read).
func (r *record) write(token uint64, read, value int64) (accepted, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token != 0 && token < r.highest {
		return false, false
	}
	r.highest = max(r.highest, token)
	lost = r.value != read
	r.value = value
	return true, lost
}

func (r *record) read() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value
}

// Run runs the workers until ctx ends and fills stats.
func Run(ctx context.Context, cfg Config, stats *Stats) {
	modes := cfg.Modes
	if len(modes) == 0 {
		modes = AllModes
	}
	hold := cfg.Hold
	if hold <= 0 {
		hold = time.Millisecond
	}
	records := map[string]*record{}
	for _, name := range []string{"plain", "fair", "fenced", "multi-a", "multi-b", "election", "rw"} {
		records[name] = &record{}
	}
	if slices.Contains(modes, Semaphore) {
		cfg.Check.Limit(string(Semaphore)+":semaphore", SemaphorePermits)
	}
	permits := &holders{inside: map[*redlock.Lease]bool{}}
	var wg sync.WaitGroup
	next := 0
	for _, mode := range modes {
		for range cfg.Workers {
			client := cfg.Clients[next%len(cfg.Clients)]
			next++
			w := &worker{mode: mode, hold: hold, check: cfg.Check, stats: stats, records: records, permits: permits,
				lock: Locker(client, mode, cfg.Options...), names: Names(mode)}
			wg.Go(func() { w.run(ctx) })
		}
	}
	wg.Wait()
}

type worker struct {
	mode    Mode
	hold    time.Duration
	check   *checker.Checker
	stats   *Stats
	records map[string]*record
	permits *holders // the Semaphore mode's holders
	lock    func(context.Context) (*redlock.Lease, error)
	names   []string
}

// Locker returns the Lock of mode's lock on c, as the workers take it:
// opts, then WithFencing (and WithFair in Fair mode), on the names of
// Names(mode). Checks outside the workload (recovery, negative controls)
// take the same locks with it.
func Locker(c *redlock.Client, mode Mode, opts ...redlock.Option) func(context.Context) (*redlock.Lease, error) {
	switch mode {
	case Semaphore:
		return c.Semaphore("semaphore", SemaphorePermits, opts...).Acquire
	case Election:
		e := c.Election("election", opts...) // terms are fencing tokens
		return func(ctx context.Context) (*redlock.Lease, error) { return e.Campaign(ctx, "worker") }
	}
	opts = append(slices.Clip(opts), redlock.WithFencing())
	switch mode {
	case RW:
		read, write := ReadWrite(c, opts...)
		var calls atomic.Int64
		return func(ctx context.Context) (*redlock.Lease, error) {
			if calls.Add(1)%3 == 0 {
				return write(ctx)
			}
			return read(ctx)
		}
	case Fair:
		return c.Mutex("fair", append(opts, redlock.WithFair())...).Lock
	case Fenced:
		return c.Mutex("fenced", opts...).Lock
	case Multi:
		return redlock.Multi(c.Mutex("multi-a", opts...), c.Mutex("multi-b", opts...)).Lock
	}
	return c.Mutex("plain", opts...).Lock
}

// ReadWrite returns RLock and Lock of the RW mode's lock on c, as the
// workers take it (opts, then WithFencing: the writer's tokens).
func ReadWrite(c *redlock.Client, opts ...redlock.Option) (read, write func(context.Context) (*redlock.Lease, error)) {
	rw := c.RWMutex("rw", append(slices.Clip(opts), redlock.WithFencing())...)
	return rw.RLock, rw.Lock
}

// Grant is the checker's record of one grant of mode's lock name.
func Grant(mode Mode, name string, lease *redlock.Lease, acquired, released time.Time) checker.Grant {
	return checker.Grant{Name: string(mode) + ":" + name, Owner: lease.Owner(), Token: lease.Token(),
		Acquired: acquired, Released: released, Until: lease.Until(), Shared: reading(lease)}
}

// Names are the lock names of mode, and of the records they guard: the
// checker gets each grant once per name, as "mode:name".
func Names(mode Mode) []string {
	switch mode {
	case Fair:
		return []string{"fair"}
	case Fenced:
		return []string{"fenced"}
	case Multi:
		return []string{"multi-a", "multi-b"}
	case Election:
		return []string{"election"}
	case Semaphore:
		return []string{"semaphore"}
	case RW:
		return []string{"rw"}
	}
	return []string{"plain"}
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		lease, err := w.lock(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.stats.LockErrors.Add(1)
				pause(ctx, 10*time.Millisecond)
			}
			continue
		}
		acquired := time.Now()
		w.section(lease)
		released := time.Now()
		for _, name := range w.names {
			w.check.Record(Grant(w.mode, name, lease, acquired, released))
		}
		_ = lease.Unlock(context.Background())
	}
}

// section is the critical section: read every record, sleep, write each
// back plus one — skipped once the lease's Context is done, as the holder
// must (see the guarantees in docs/safety.md).
func (w *worker) section(lease *redlock.Lease) {
	if w.mode == Semaphore {
		w.permitSection(lease)
		return
	}
	if reading(lease) {
		w.readSection(lease)
		return
	}
	reads := make([]int64, len(w.names))
	for i, name := range w.names {
		reads[i] = w.records[name].read()
	}
	time.Sleep(w.hold)
	if lease.Context().Err() != nil {
		w.stats.LostLeases.Add(1)
		return
	}
	for i, name := range w.names {
		accepted, lost := w.records[name].write(lease.Token(), reads[i], reads[i]+1)
		switch {
		case !accepted:
			w.stats.Fenced.Add(1)
		case lost:
			w.stats.LostUpdates.Add(1)
		}
	}
	w.stats.Sections.Add(1)
}

// permitSection is the Semaphore mode's section: enter, sleep, leave;
// entering while SemaphorePermits other holders are inside with valid
// leases counts as a lost update.
func (w *worker) permitSection(lease *redlock.Lease) {
	if lease.Context().Err() != nil {
		w.stats.LostLeases.Add(1)
		return
	}
	if over := w.permits.enter(lease); over {
		w.stats.LostUpdates.Add(1)
	}
	time.Sleep(w.hold)
	w.permits.leave(lease)
	w.stats.Sections.Add(1)
}

// reading reports whether lease is a read hold (of the RW mode's lock).
func reading(lease *redlock.Lease) bool { return lease.Owner() == node.Readers }

// readSection is a reader's section: read, sleep, read again. A change
// between the two reads, the second made while the read lease was still
// valid, is a write made under a read hold: a lost update.
func (w *worker) readSection(lease *redlock.Lease) {
	record := w.records[w.names[0]]
	before := record.read()
	time.Sleep(w.hold)
	after := record.read()
	if !time.Now().Before(lease.Until()) || lease.Context().Err() != nil {
		w.stats.LostLeases.Add(1)
		return
	}
	if after != before {
		w.stats.LostUpdates.Add(1)
	}
	w.stats.Sections.Add(1)
}

// holders are the semaphore's holders inside their section.
type holders struct {
	mu     sync.Mutex
	inside map[*redlock.Lease]bool
}

// enter adds lease and reports whether SemaphorePermits others were
// inside with leases still valid (by their Until: the holder of an expired
// one must have stopped).
func (h *holders) enter(lease *redlock.Lease) (over bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now, valid := time.Now(), 0
	for other := range h.inside {
		if now.Before(other.Until()) {
			valid++
		}
	}
	h.inside[lease] = true
	return valid >= SemaphorePermits
}

func (h *holders) leave(lease *redlock.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inside, lease)
}

func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}
