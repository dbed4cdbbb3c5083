package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/pubsub"
	"github.com/quorumlock/redlock/reentrant"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Client grants locks over a fixed set of independent Redis nodes. It is
// safe for concurrent use. Close it when done: it releases the leases it
// still holds and stops its background work.
type Client struct {
	nodes    []*node.Node
	defaults core.Settings
	owned    []redis.UniversalClient // made by Dial; closed by Close
	hub      *pubsub.Hub             // release notices → waiter wake-ups
	gates    gates                   // local queue per lock: one contender per Client
	health   *health                 // which nodes answer: picks the lead node
	tickets  fair.Tickets            // fair-mode queue positions
	clock    fair.Clock              // the nodes' time, for tickets
	watchdog *watchdog               // renews every lease with the watchdog on
	sweeper  *sweeper                // releases that nodes did not answer, tried again
	tag      string                  // names this Client's notice channels
	longest  atomic.Int64            // the longest TTL used so far: the default restart guard
	quarantines
	stopWarm context.CancelFunc // cuts the warm-up (see warm)
	warmed   <-chan error       // the warm-up's results, one per node

	// background tracks every goroutine the Client starts (stragglers of a
	// round, deferred releases); Close waits for all of them.
	background sync.WaitGroup

	done   chan struct{}  // closed by Close: waiters give up
	active sync.WaitGroup // Lock, TryLock, Unlock and Extend calls in progress

	mu     sync.Mutex
	closed bool
	leases map[*lease]struct{}
}

// New implements redlock.New, which documents it.
func New(nodes []redis.UniversalClient, opts ...core.Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", core.ErrConfig)
	}
	defaults := core.DefaultSettings().With(opts)
	if err := defaults.Validate(len(nodes)); err != nil {
		return nil, err
	}
	c := &Client{defaults: defaults, leases: make(map[*lease]struct{}), done: make(chan struct{}), tag: reentrant.NewID()}
	c.longest.Store(int64(defaults.TTL))
	c.defaults.Stretch = c.stretch
	for i, client := range nodes {
		if isNil(client) {
			return nil, fmt.Errorf("%w: node %d is a nil client", core.ErrConfig, i)
		}
		c.nodes = append(c.nodes, node.New(i, addrOf(client), client))
	}
	c.hub = pubsub.New(nodes, defaults.NodeTimeout)
	c.health = newHealth(len(nodes))
	c.watchdog = newWatchdog(c)
	c.sweeper = newSweeper(c)
	c.warmed = c.warm()
	return c, nil
}

// Dial implements redlock.Dial, which documents it.
func Dial(urls []string, opts ...core.Option) (*Client, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no nodes", core.ErrConfig)
	}
	resolved := core.DefaultSettings().With(opts)
	timeout := resolved.NodeTimeout
	clients := make([]redis.UniversalClient, 0, len(urls))
	closeAll := func() {
		for _, client := range clients {
			_ = client.Close()
		}
	}
	for i, url := range urls {
		options, err := redis.ParseURL(url)
		if err != nil {
			closeAll()
			// The URL itself is not echoed: it may carry a password.
			return nil, fmt.Errorf("%w: node %d: %v", core.ErrConfig, i, redactURLError(err, url))
		}
		if options.TLSConfig != nil && resolved.TLS != nil {
			serverName := options.TLSConfig.ServerName
			options.TLSConfig = resolved.TLS.Clone()
			if options.TLSConfig.ServerName == "" {
				options.TLSConfig.ServerName = serverName
			}
		}
		options.ContextTimeoutEnabled = true
		// One dial per call: the lock retries on its own schedule, and a
		// dead node must fail its call at once, not after go-redis's
		// dial backoff has eaten the node timeout.
		options.DialerRetries = 1
		// No command retries either: a retried acquire is a second copy
		// on another connection, and the first may still arrive after the
		// release (see release.lua's tombstones); the lock retries itself.
		options.MaxRetries = -1
		if options.PoolSize == 0 { // no pool_size in the URL
			options.PoolSize = dialPoolSize
			options.PipelinePoolSize = -1 // pipelines share that pool
		}
		if timeout > 0 {
			options.DialTimeout = timeout
			options.ReadTimeout = timeout
			options.WriteTimeout = timeout
		}
		clients = append(clients, redis.NewClient(options))
	}
	c, err := New(clients, opts...)
	if err != nil {
		closeAll()
		return nil, err
	}
	c.owned = clients
	c.awaitWarm(c.warmed, timeout)
	return c, nil
}

// closeParallelism bounds how many leases Close releases at once: each
// release is one call per node, and a Client with thousands of leases
// should not open thousands of goroutines and connections at Close.
const closeParallelism = 64

// Close implements redlock.Client.Close, which documents it.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return core.ErrClosed
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	c.stopWarm()
	// Calls in progress end soon (waiters see done; a round is bounded by
	// the node timeout); only then is the set of leases final.
	c.active.Wait()
	c.releaseAll()
	c.watchdog.close()
	c.hub.Close()
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		c.background.Wait()
		for _, n := range c.nodes {
			n.Wait()
		}
	}()
	// Nothing needs an answer any more. Calls still out to nodes that
	// answer end within a round trip. Past closeGrace, the connections
	// Dial made close: a call still out to a silent node (the straggler
	// of a round, its release, a probe) then ends at once instead of at
	// its timeout, so a paused node does not hold up Close. (go-redis
	// logs a line for each connection closed under a call, hence the
	// grace.) go-redis does not cut a read on cancellation, so calls on
	// the caller's own clients (New) end at their timeouts, and Close
	// waits for them.
	var errs []error
	if len(c.owned) > 0 {
		grace := time.NewTimer(c.closeGrace())
		select {
		case <-idle:
		case <-grace.C:
		}
		grace.Stop()
		for _, client := range c.owned {
			if err := client.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	<-idle
	return core.JoinErrors(errs...)
}

// releaseAll releases every lease still tracked, closeParallelism at a
// time, best effort: what a node does not answer expires at its TTL.
func (c *Client) releaseAll() {
	c.mu.Lock()
	leases := make([]*lease, 0, len(c.leases))
	for lease := range c.leases {
		leases = append(leases, lease)
	}
	c.mu.Unlock()
	var releases errgroup.Group
	releases.SetLimit(closeParallelism)
	for _, lease := range leases {
		releases.Go(func() error {
			_ = lease.release(context.Background(), core.ErrClosed, true)
			return nil
		})
	}
	_ = releases.Wait()
}

// Mutex implements redlock.Client.Mutex, which documents it.
func (c *Client) Mutex(name string, opts ...core.Option) *Mutex {
	return c.newMutex(name, opts, false, nil)
}

// newMutex builds a Mutex, the read side of an RWMutex with read; setup,
// when not nil, adjusts it before its mode and queue are made from it.
func (c *Client) newMutex(name string, opts []core.Option, read bool, setup func(*Mutex)) *Mutex {
	m := &Mutex{client: c, name: name, settings: c.defaults.With(opts)}
	m.err = m.settings.Validate(len(c.nodes))
	if name == "" {
		m.err = fmt.Errorf("%w: empty lock name", core.ErrConfig)
	}
	m.keys = core.KeysFor(m.settings.KeyPrefix, name, c.restartGuard(m.settings))
	m.keys.Clock = m.settings.ClockCheck()
	m.keys.Fenced = m.settings.Fencing
	if setup != nil {
		setup(m)
	}
	m.mode, m.queue = newMode(m, read)
	return m
}

// nodeAddrs names the node set, to order Multi's parts across Clients.
func (c *Client) nodeAddrs() string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return strings.Join(addrs, ",")
}

// track registers a lease so Close can release it; it fails once closed.
func (c *Client) track(lease *lease) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return core.ErrClosed
	}
	c.leases[lease] = struct{}{}
	return nil
}

func (c *Client) untrack(lease *lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.leases, lease)
}

// begin counts an API call in progress, or reports false once closed.
// Each true is matched by end.
func (c *Client) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.active.Add(1)
	return true
}

func (c *Client) end() { c.active.Done() }

// nodeError wraps a node's failure and tells the observer.
func (c *Client) nodeError(s *core.Settings, index int, err error) *core.NodeError {
	nodeErr := &core.NodeError{Node: index, Addr: c.nodes[index].Addr(), Err: err}
	c.sawQuarantine(s, index, err)
	// Debug: while a node is down every round reports it; the round's
	// outcome (no quorum, a lost lease) is what deserves a warning.
	s.Logger.Debug("redlock: node error", "node", index, "addr", nodeErr.Addr, "err", err)
	if s.Observer.NodeError != nil {
		s.Observer.NodeError(nodeErr)
	}
	return nodeErr
}

func isNil(client redis.UniversalClient) bool {
	if client == nil {
		return true
	}
	value := reflect.ValueOf(client)
	return value.Kind() == reflect.Pointer && value.IsNil()
}

func addrOf(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		return "ring"
	}
	return fmt.Sprintf("%T", client)
}

func redactURLError(err error, url string) string {
	message := err.Error()
	if url != "" {
		message = strings.ReplaceAll(message, url, "<url>")
	}
	return message
}

// dialPoolSize is the connection pool of each client Dial makes. The Client
// pipelines its calls to a node (one pipeline in flight at a time), so a
// few connections serve it; and go-redis logs each failed dial until as
// many dials as the pool size have failed, then probes the node quietly
// once a second: a small pool keeps a dead node to a few lines of log.
const dialPoolSize = 4
