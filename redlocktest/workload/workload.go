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
// monotonic clock. The demo (cmd/redlock) runs Workers of its own, on two
// unfenced locks of its own, for the same section and checks.
package workload

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest/checker"
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
	Sections     atomic.Int64 // writes made under a valid lease
	LostUpdates  atomic.Int64 // sections whose write did not land on top of the read; for a semaphore, sections entered with every permit's holder inside and valid
	Fenced       atomic.Int64 // stale writes the record refused by fencing token
	LostLeases   atomic.Int64 // leases found lost before the write: no write made
	LockErrors   atomic.Int64 // Lock calls that failed before the run ended
	UnlockErrors atomic.Int64 // Unlock calls that failed
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

// Records are what the workers of a run share: a record per lock name (a
// lock guards the record of its name) and the semaphore's holders. The
// zero value is ready.
type Records struct {
	mu      sync.Mutex
	byName  map[string]*record
	permits holders
}

func (r *Records) record(name string) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string]*record{}
	}
	if r.byName[name] == nil {
		r.byName[name] = &record{}
	}
	return r.byName[name]
}

// Value is the value of name's record: the writes that landed on it.
func (r *Records) Value(name string) int64 { return r.record(name).read() }

// Run runs the workers until ctx ends and fills stats.
func Run(ctx context.Context, cfg Config, stats *Stats) {
	modes := cfg.Modes
	if len(modes) == 0 {
		modes = AllModes
	}
	if slices.Contains(modes, Semaphore) {
		cfg.Check.Limit(string(Semaphore)+":semaphore", SemaphorePermits)
	}
	records := &Records{}
	var wg sync.WaitGroup
	next := 0
	for _, mode := range modes {
		for range cfg.Workers {
			client := cfg.Clients[next%len(cfg.Clients)]
			next++
			w := &Worker{Mode: mode, Lock: Locker(client, mode, cfg.Options...), Names: Names(mode),
				Hold: cfg.Hold, Check: cfg.Check, Stats: stats, Records: records}
			wg.Go(func() { w.Run(ctx) })
		}
	}
	wg.Wait()
}

// Worker takes Lock over and over until ctx ends, does Mode's section on
// the records of Names under each lease and gives every grant to Check.
// Run makes them on Locker's locks; the demo makes its own on other locks.
type Worker struct {
	Mode    Mode
	Lock    func(context.Context) (*redlock.Lease, error)
	Names   []string      // the records it writes; the checker gets each grant as "mode:name"
	Hold    time.Duration // the sleep between read and write (default 1ms)
	Check   *checker.Checker
	Stats   *Stats
	Records *Records
	Hooks   Hooks
}

// Hooks let a caller watch a worker (the demo times lock waits and
// handoffs with them). Each runs on the worker's goroutine; nil ones are
// skipped.
type Hooks struct {
	Granted   func(began, acquired time.Time) // a Lock called at began returned a lease at acquired
	Releasing func(at time.Time)              // the holder is done and about to Unlock
	Failed    func(err error)                 // a Lock (before ctx ended) or an Unlock failed
}

// Run is the worker's loop; it returns once ctx has ended.
func (w *Worker) Run(ctx context.Context) {
	records := make([]*record, len(w.Names))
	for i, name := range w.Names {
		records[i] = w.Records.record(name)
	}
	for ctx.Err() == nil {
		began := time.Now()
		lease, err := w.Lock(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.Stats.LockErrors.Add(1)
				w.failed(err)
				Pause(ctx, 10*time.Millisecond)
			}
			continue
		}
		acquired := time.Now()
		if w.Hooks.Granted != nil {
			w.Hooks.Granted(began, acquired)
		}
		w.section(lease, records)
		w.release(lease, acquired)
	}
}

// release gives the grant to the checker, once per name, and unlocks:
// with a Context of its own, so that a run that ends still unlocks.
func (w *Worker) release(lease *redlock.Lease, acquired time.Time) {
	released := time.Now()
	for _, name := range w.Names {
		w.Check.Record(Grant(w.Mode, name, lease, acquired, released))
	}
	if w.Hooks.Releasing != nil {
		w.Hooks.Releasing(released)
	}
	if err := lease.Unlock(context.Background()); err != nil {
		w.Stats.UnlockErrors.Add(1)
		w.failed(err)
	}
}

func (w *Worker) failed(err error) {
	if w.Hooks.Failed != nil {
		w.Hooks.Failed(err)
	}
}

func (w *Worker) hold() time.Duration {
	if w.Hold <= 0 {
		return time.Millisecond
	}
	return w.Hold
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

// section is the critical section: read every record, sleep, write each
// back plus one — skipped once the lease's Context is done, as the holder
// must (see the guarantees in docs/safety.md).
func (w *Worker) section(lease *redlock.Lease, records []*record) {
	if w.Mode == Semaphore {
		w.permitSection(lease)
		return
	}
	if reading(lease) {
		w.readSection(lease, records[0])
		return
	}
	reads := make([]int64, len(records))
	for i, r := range records {
		reads[i] = r.read()
	}
	time.Sleep(w.hold())
	if lease.Context().Err() != nil {
		w.Stats.LostLeases.Add(1)
		return
	}
	for i, r := range records {
		accepted, lost := r.write(lease.Token(), reads[i], reads[i]+1)
		switch {
		case !accepted:
			w.Stats.Fenced.Add(1)
		case lost:
			w.Stats.LostUpdates.Add(1)
		}
	}
	w.Stats.Sections.Add(1)
}

// permitSection is the Semaphore mode's section: enter, sleep, leave;
// entering while SemaphorePermits other holders are inside with valid
// leases counts as a lost update.
func (w *Worker) permitSection(lease *redlock.Lease) {
	if lease.Context().Err() != nil {
		w.Stats.LostLeases.Add(1)
		return
	}
	if over := w.Records.permits.enter(lease); over {
		w.Stats.LostUpdates.Add(1)
	}
	time.Sleep(w.hold())
	w.Records.permits.leave(lease)
	w.Stats.Sections.Add(1)
}

// reading reports whether lease is a read hold (of the RW mode's lock).
func reading(lease *redlock.Lease) bool { return lease.Owner() == node.Readers }

// readSection is a reader's section: read, sleep, read again. A change
// between the two reads, the second made while the read lease was still
// valid, is a write made under a read hold: a lost update.
func (w *Worker) readSection(lease *redlock.Lease, record *record) {
	before := record.read()
	time.Sleep(w.hold())
	after := record.read()
	if !time.Now().Before(lease.Until()) || lease.Context().Err() != nil {
		w.Stats.LostLeases.Add(1)
		return
	}
	if after != before {
		w.Stats.LostUpdates.Add(1)
	}
	w.Stats.Sections.Add(1)
}

// holders are the semaphore's holders inside their section. The zero
// value is ready.
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
	if h.inside == nil {
		h.inside = map[*redlock.Lease]bool{}
	}
	h.inside[lease] = true
	return valid >= SemaphorePermits
}

func (h *holders) leave(lease *redlock.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inside, lease)
}

// Pause sleeps for d or until ctx ends, and reports whether d passed. The
// demo paces its phases with it too.
func Pause(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
