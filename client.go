package redlock

import (
	"github.com/quorumlock/redlock/internal/engine"
	"github.com/redis/go-redis/v9"
)

// Client grants locks over a fixed set of independent Redis nodes. It is
// safe for concurrent use. Close it when done: it releases the leases it
// still holds and stops its background work.
type Client struct {
	e *engine.Client
}

// New returns a Client over nodes: one client per independent Redis node
// (each may itself be a Redis Cluster or a Sentinel-backed client, not a
// go-redis Ring, which moves keys between shards: ErrConfig). The
// Client does not close them. Options set the defaults of every Mutex.
// New does not wait for the nodes: it starts connecting to each, and
// reading its clock, in the background, so the first Lock need not.
//
// For each call to a node to be cut off at the node timeout, make the
// clients with ContextTimeoutEnabled: true (Dial does); otherwise rounds
// still end on time, but a stuck call lingers until the client's ReadTimeout.
func New(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	return clientOf(engine.New(nodes, opts...))
}

// Dial makes one go-redis client per URL (redis:// or rediss://, with
// user, password and database as go-redis's ParseURL reads them) and
// returns a Client that owns them: Close closes them. A URL whose query
// names a master is a Sentinel-managed node, dialled as go-redis's
// ParseFailoverURL reads it (a failover client):
// redis://sentinel1:26379?master_name=mymaster&addr=sentinel2:26379.
// A URL of scheme redis+cluster:// (or rediss+cluster://) is a Redis
// Cluster member, seeded by its host and each addr= (go-redis's
// ParseClusterURL): redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7000.
// Like New, it connects to every node in the background; it returns once a
// quorum answered, or after the node timeout. A node that is down is not an error
// here; the first Lock or TryLock reports unreachable nodes as *NodeError.
// Only a malformed URL or option is (ErrConfig). Each client keeps a pool
// of four connections (pool_size in a URL overrides it), so go-redis logs
// at most four failed dials per outage of a node. See docs/operations.md,
// "Dial, your own clients, and go-redis's logs".
func Dial(urls []string, opts ...Option) (*Client, error) {
	return clientOf(engine.Dial(urls, opts...))
}

// Close releases every lease the Client still holds (each bounded by the
// node timeout, best effort: a lease that cannot be released expires at its
// TTL), closes the connections Dial made, and waits for all background
// work to stop. Calls still out get three round trips of the farthest node
// (at least 100 ms) to finish; then closing Dial's connections cuts those
// to a silent node.
// Calls on the caller's own clients (New) end at their timeouts, and Close
// waits for them. After Close every method returns ErrClosed.
func (c *Client) Close() error {
	return c.e.Close()
}

// Mutex returns the lock called name. It is cheap and safe for concurrent
// use; options override the Client's defaults for this mutex. Invalid input
// (an empty name, a bad option) is reported by Lock and TryLock as
// ErrConfig.
func (c *Client) Mutex(name string, opts ...Option) *Mutex {
	return &Mutex{e: c.e.Mutex(name, opts...)}
}

func clientOf(c *engine.Client, err error) (*Client, error) {
	if err != nil {
		return nil, err
	}
	return &Client{e: c}, nil
}
