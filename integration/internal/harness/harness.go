// Package harness is what the integration tests and the chaos runner do
// with the library over containerized nodes: Clients with the suites' short
// TTL, the workload's lock in each mode (same names, so that checks outside
// the workload see the locks the workers used), and the recovery check.
package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/workload"
	"github.com/redis/go-redis/v9"
)

// The suites' settings: a TTL short enough that faults outlast leases in
// seconds, and a node timeout that keeps a paused node from slowing rounds.
const (
	TTL         = time.Second
	NodeTimeout = 100 * time.Millisecond
)

// Options are the suites' library options.
func Options() []redlock.Option {
	return []redlock.Option{redlock.WithTTL(TTL), redlock.WithNodeTimeout(NodeTimeout)}
}

// Quiet drops go-redis's own log lines: the suites take nodes down on
// purpose, and every refused dial would be logged. The library reports
// node faults through its errors, which the workload counts.
func Quiet() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Dial returns n Clients over urls, each with connections of its own, as n
// processes would have.
func Dial(urls []string, n int, opts ...redlock.Option) ([]*redlock.Client, error) {
	clients := make([]*redlock.Client, 0, n)
	for range n {
		c, err := redlock.Dial(urls, opts...)
		if err != nil {
			return nil, errors.Join(err, CloseAll(clients))
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// CloseAll closes every client.
func CloseAll(clients []*redlock.Client) error {
	var errs []error
	for _, c := range clients {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Locker takes the lock that the workload's workers take in mode (fenced,
// as every mode is): workload.Locker.
func Locker(c *redlock.Client, mode workload.Mode, opts ...redlock.Option) func(context.Context) (*redlock.Lease, error) {
	return workload.Locker(c, mode, opts...)
}

// Record gives the checker one grant of mode's lock(s), named as the
// workload names them, with the lease's fencing token.
func Record(check *checker.Checker, mode workload.Mode, lease *redlock.Lease, acquired, released time.Time) {
	for _, name := range workload.Names(mode) {
		check.Record(workload.Grant(mode, name, lease, acquired, released))
	}
}

// Recover checks that a fresh Client gets the lock of every mode within
// `within` each, once the nodes are healed: no fault left a lock wedged. It
// returns how long each mode took.
func Recover(ctx context.Context, urls []string, within time.Duration) (map[workload.Mode]time.Duration, error) {
	clients, err := Dial(urls, 1, Options()...)
	if err != nil {
		return nil, err
	}
	defer clients[0].Close()
	return RecoverClient(ctx, clients[0], within)
}

// RecoverClient is Recover with a fresh Client made by the caller (over
// nodes Dial cannot make, such as Sentinel's failover clients).
func RecoverClient(ctx context.Context, c *redlock.Client, within time.Duration) (map[workload.Mode]time.Duration, error) {
	took := map[workload.Mode]time.Duration{}
	var failed []string
	for _, mode := range workload.AllModes {
		lockCtx, cancel := context.WithTimeout(ctx, within)
		start := time.Now()
		lease, err := Locker(c, mode, Options()...)(lockCtx)
		took[mode] = time.Since(start)
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: no grant within %v: %v", mode, within, err))
			continue
		}
		_ = lease.Unlock(ctx)
	}
	if len(failed) > 0 {
		return took, errors.New("recovery: " + strings.Join(failed, "; "))
	}
	return took, nil
}

// FormatTook prints Recover's durations in mode order.
func FormatTook(took map[workload.Mode]time.Duration) string {
	parts := make([]string, 0, len(took))
	for _, mode := range workload.AllModes {
		if d, ok := took[mode]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", mode, d.Round(time.Millisecond)))
		}
	}
	return strings.Join(parts, ", ")
}

// Sleep waits for d or until ctx is done, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
