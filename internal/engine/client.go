package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/pubsub"
	"github.com/quorumlock/redlock/reentrant"
	"github.com/redis/go-redis/v9"
)

// Client: see redlock.Client, which documents it.
type Client struct {
	runtime  *leases.Runtime // the leases, nodes, gates and background work all locks of this Client share
	defaults core.Settings
	owned    []redis.UniversalClient // made by Dial; closed by Close
	lead     *leadChoice             // which nodes answer: picks the lead node
	tickets  fair.Tickets            // fair-mode queue positions
	clock    fair.Clock              // the nodes' time, for tickets
	tag      string                  // names this Client's notice channels
	longest  atomic.Int64            // the longest TTL used so far: the default restart guard
	stopWarm context.CancelFunc      // cuts the warm-up (see warm)
	warmed   <-chan error            // the warm-up's results, one per node
	records  *atomic.Int64           // the longest guard any node answered (see node.ShareGuard)
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
	c := &Client{runtime: leases.NewRuntime(), defaults: defaults, tag: reentrant.NewID()}
	c.longest.Store(int64(defaults.TTL))
	c.defaults.Stretch = c.stretch
	c.records = new(atomic.Int64) // the longest guard any node records
	for i, client := range nodes {
		if err := memberError(i, client); err != nil {
			return nil, err
		}
		n := node.New(i, AddrOf(client), client)
		n.ShareGuard(defaults.KeyPrefix+"node", c.records)
		c.runtime.Nodes = append(c.runtime.Nodes, n)
	}
	c.runtime.Hub = pubsub.New(nodes, defaults.NodeTimeout)
	c.lead = newLeadChoice(len(nodes))
	c.runtime.Watchdog = leases.NewWatchdog(c.runtime)
	c.runtime.Sweeper = leases.NewSweeper(c.runtime)
	c.warmed = c.warm()
	return c, nil
}

// Dial implements redlock.Dial, which documents it.
func Dial(urls []string, opts ...core.Option) (*Client, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no nodes", core.ErrConfig)
	}
	resolved := core.DefaultSettings().With(opts)
	clients := make([]redis.UniversalClient, 0, len(urls))
	closeAll := func() {
		for _, client := range clients {
			_ = client.Close()
		}
	}
	for i, raw := range urls {
		client, err := DialNode(raw, resolved)
		if err != nil {
			closeAll()
			// The URL itself is not echoed: it may carry a password.
			return nil, fmt.Errorf("%w: node %d: %v", core.ErrConfig, i, redactURLError(err, raw))
		}
		clients = append(clients, client)
	}
	c, err := New(clients, opts...)
	if err != nil {
		closeAll()
		return nil, err
	}
	c.owned = clients
	c.awaitWarm(c.warmed, resolved.NodeTimeout)
	return c, nil
}

// Close implements redlock.Client.Close, which documents it.
func (c *Client) Close() error {
	c.stopWarm() // idempotent: a second Close cuts nothing
	if !c.runtime.Shut() {
		return core.ErrClosed
	}
	c.runtime.ReleaseAll()
	c.runtime.Watchdog.Close()
	c.runtime.Hub.Close()
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		c.runtime.Background.Wait()
		for _, n := range c.runtime.Nodes {
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

// Mutex implements redlock.Client.Mutex, which documents it.
func (c *Client) Mutex(name string, opts ...core.Option) *Mutex {
	return c.newMutex(name, opts, false, nil)
}

// newMutex builds a Mutex, the read side of an RWMutex with read; setup,
// when not nil, adjusts it before its mode and queue are made from it.
func (c *Client) newMutex(name string, opts []core.Option, read bool, setup func(*Mutex)) *Mutex {
	m := &Mutex{target: &leases.Target{Runtime: c.runtime, LockName: name, Settings: c.defaults.With(opts)}, client: c}
	m.err = m.target.Settings.Validate(len(c.runtime.Nodes))
	if name == "" {
		m.err = fmt.Errorf("%w: empty lock name", core.ErrConfig)
	}
	m.target.Keys = core.KeysFor(m.target.Settings.KeyPrefix, name, c.restartGuard(m.target.Settings))
	m.target.Keys.Risks = m.target.Settings.Risks
	m.target.Keys.Clock = m.target.Settings.ClockCheck()
	m.target.Keys.Fenced = m.target.Settings.Fencing
	if setup != nil {
		setup(m)
	}
	m.mode, m.target.Queue = newMode(m, read)
	m.target.Mode = m.mode // the lease's side of the mode
	return m
}

// nodeAddrs names the node set, to order Multi's parts across Clients.
func (c *Client) nodeAddrs() string {
	addrs := make([]string, len(c.runtime.Nodes))
	for i, n := range c.runtime.Nodes {
		addrs[i] = n.Addr()
	}
	return strings.Join(addrs, ",")
}

// memberError refuses a client that cannot be a lock node: nil, or a
// go-redis Ring, whose heartbeat moves keys between shards (issue 40, row 6).
func memberError(i int, client redis.UniversalClient) error {
	if isNil(client) {
		return fmt.Errorf("%w: node %d is a nil client", core.ErrConfig, i)
	}
	if _, ring := client.(*redis.Ring); ring {
		return fmt.Errorf("%w: node %d is a go-redis Ring: when its heartbeat finds a shard down it sends that "+
			"shard's keys to another shard, so a lock moves without its lease and is granted again there; "+
			"use a plain client per Redis node (redis.NewClient), or a Redis Cluster member (redis.NewClusterClient)",
			core.ErrConfig, i)
	}
	return nil
}

func isNil(client redis.UniversalClient) bool {
	if client == nil {
		return true
	}
	value := reflect.ValueOf(client)
	return value.Kind() == reflect.Pointer && value.IsNil()
}

func AddrOf(client redis.UniversalClient) string {
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
