package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	dockernet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// readyTimeout bounds a node's start: the image is local, so a node that
// is not up by then will not come up.
const readyTimeout = 30 * time.Second

var redisPort = dockernet.MustParsePort("6379/tcp")

// Config describes a Cluster.
type Config struct {
	Nodes  int        // default 5
	Image  string     // default Image()
	Logger log.Logger // Testcontainers' own lines; default: dropped
}

// Cluster is a set of independent Redis nodes, one container each, on a
// private Docker network created for it. Its methods are safe for
// concurrent use on different nodes.
type Cluster struct {
	cfg    Config
	docker *testcontainers.DockerClient
	net    *testcontainers.DockerNetwork
	nodes  []*node
}

// node is one container and the fault it is under ("" when healthy).
type node struct {
	mu    sync.Mutex
	index int
	port  int // published on 127.0.0.1; kept across stop/start and Recreate
	env   map[string]string
	ctr   *testcontainers.DockerContainer
	fault Kind
}

// Start creates the network and the nodes, and returns once every node
// answers PING through its published port. On error it removes whatever
// it created.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 5
	}
	if cfg.Image == "" {
		cfg.Image = Image()
	}
	if cfg.Logger == nil {
		cfg.Logger = log.NewNoopLogger()
	}
	c := &Cluster{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close(context.WithoutCancel(ctx)))
		}
	}()
	if c.docker, err = testcontainers.NewDockerClientWithOpts(ctx); err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if c.net, err = tcnetwork.New(ctx, tcnetwork.WithLabels(map[string]string{Label: "1"})); err != nil {
		return nil, fmt.Errorf("create network: %w", err)
	}
	ports, err := freePorts(cfg.Nodes)
	if err != nil {
		return nil, err
	}
	for i, port := range ports {
		c.nodes = append(c.nodes, &node{index: i, port: port})
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = c.create(ctx, n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// New nodes never held a lock: their markers say so, or redlock's
	// restart guard would keep them from voting for a TTL. A restart
	// later does not set it again: that is the loss the guard is for.
	all := make([]int, len(c.nodes))
	for i := range all {
		all[i] = i
	}
	if err := c.MarkNew(ctx, all...); err != nil {
		return nil, err
	}
	return c, nil
}

// MarkNew declares nodes new for their running process, as `redlock init`
// would ("0 <run_id>", see node/scripts/guard.lua), but without its check
// for lock keys: the suite knows that no lock kept on them is still valid
// (a new container, or one whose locks have all expired; fence counters
// stay), so they vote at once.
func (c *Cluster) MarkNew(ctx context.Context, nodes ...int) error {
	for _, i := range nodes {
		client := c.Client(i)
		err := markProcess(ctx, client)
		_ = client.Close()
		if err != nil {
			return fmt.Errorf("node %d: mark it new: %w", i, err)
		}
	}
	return nil
}

// create runs n's container with n.env and waits until it answers.
func (c *Cluster) create(ctx context.Context, n *node) error {
	binding := dockernet.PortBinding{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(n.port)}
	ctr, err := testcontainers.Run(ctx, c.cfg.Image,
		testcontainers.WithLogger(c.cfg.Logger),
		testcontainers.WithExposedPorts(redisPort.String()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = dockernet.PortMap{redisPort: {binding}}
		}),
		tcnetwork.WithNetwork([]string{n.alias()}, c.net),
		testcontainers.WithEnv(n.env),
		testcontainers.WithLabels(map[string]string{Label: "1"}),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections").WithStartupTimeout(readyTimeout)),
	)
	if ctr != nil {
		n.ctr = ctr // set even on error, so that Close removes it
	}
	if err != nil {
		return fmt.Errorf("node %d: start container: %w", n.index, err)
	}
	return c.waitReady(ctx, n)
}

func (n *node) alias() string { return fmt.Sprintf("redis%d", n.index+1) }

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.nodes) }

// Addr is node i's address on the host: 127.0.0.1 and its published port.
func (c *Cluster) Addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.nodes[i].port))
}

// URLs are the nodes' redis:// URLs, for redlock.Dial.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = "redis://" + c.Addr(i)
	}
	return urls
}

// Client returns a plain client of node i, for checks outside the library.
func (c *Cluster) Client(i int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.Addr(i), DialTimeout: 250 * time.Millisecond,
		ReadTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
}

// waitReady waits until n answers PING through its published port: the
// container's log line comes before Docker's port proxy is back after a
// start or reconnect.
func (c *Cluster) waitReady(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	rdb := c.Client(n.index)
	defer rdb.Close()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d (%s) not ready: %w", n.index, c.Addr(n.index), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Recreate replaces node i's container by a new, empty one with env (e.g.
// FastClock), on the same port and network alias.
func (c *Cluster) Recreate(ctx context.Context, i int, env map[string]string) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := c.remove(ctx, n); err != nil {
		return err
	}
	n.env, n.fault, n.ctr = env, "", nil
	return c.create(ctx, n)
}

// remove deletes n's container whatever its state (paused included).
func (c *Cluster) remove(ctx context.Context, n *node) error {
	if n.ctr == nil {
		return nil
	}
	if n.fault == Pause {
		_, _ = c.docker.ContainerUnpause(ctx, n.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	}
	if err := n.ctr.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil {
		if _, rmErr := c.docker.ContainerRemove(ctx, n.ctr.GetContainerID(),
			client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rmErr != nil {
			return fmt.Errorf("node %d: remove container: %w", n.index, errors.Join(err, rmErr))
		}
	}
	return nil
}

// Close removes every container and the network. It is safe to call on a
// partly started Cluster, and with any faults still in place.
func (c *Cluster) Close(ctx context.Context) error {
	errs := make([]error, len(c.nodes)+2)
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			errs[i] = c.remove(ctx, n)
			n.ctr = nil
		})
	}
	wg.Wait()
	if c.net != nil {
		if err := c.net.Remove(ctx); err != nil {
			errs[len(c.nodes)] = fmt.Errorf("remove network: %w", err)
		}
	}
	if c.docker != nil {
		errs[len(c.nodes)+1] = c.docker.Close()
	}
	return errors.Join(errs...)
}

// freePorts picks n loopback ports that are free now. All listeners stay
// open until every port is picked, so the n ports differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// markProcess sets the marker "0 <run_id>" of the node's process.
func markProcess(ctx context.Context, client *redis.Client) error {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return client.Set(ctx, "redlock:node", "0 "+id, 0).Err()
		}
	}
	return fmt.Errorf("no run_id in INFO server")
}
