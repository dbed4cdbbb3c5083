package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
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

// Sentinel's settings in the replicated topology: a silent master is down
// after DownAfter, and its replica promoted a second or two later.
// failoverTimeout also spaces Sentinel's retries of a failed failover.
const (
	DownAfter       = time.Second
	failoverTimeout = 10 * time.Second
)

// sentinelTCP is the sentinel's port (sentinel.conf).
var sentinelTCP = dockernet.MustParsePort("26379/tcp")

// ReplicatedConfig describes a Replicated topology.
type ReplicatedConfig struct {
	Members int        // default 3
	Image   string     // default Image()
	Logger  log.Logger // Testcontainers' own lines; default: dropped
}

// Replicated is a set of independent members, each a master, one replica
// and a redis-sentinel that fails the master over to the replica, every
// one in a container of its own on a private Docker network created for
// it. Each container keeps a fixed address on that network: Sentinel
// keeps the address it first resolved, and Docker would give a restarted
// container another. Its methods are safe for concurrent use on
// different members.
type Replicated struct {
	cfg     ReplicatedConfig
	docker  *testcontainers.DockerClient
	net     *testcontainers.DockerNetwork
	members []*member
}

// member is one member: its two redis-servers (either may be the master;
// Sentinel says which), its sentinel, and its fault.
type member struct {
	mu       sync.Mutex
	index    int
	data     [2]*box
	sentinel *box
	fault    Fault
	down     int // the data container killed, paused or cut off by fault
	cut      int // the data container whose replication link is cut; -1 none
}

// box is one container: its fixed address on the network, its port
// published on 127.0.0.1, its arguments to redis-server.
type box struct {
	alias string
	ip    netip.Addr
	port  int
	args  []string
	ctr   *testcontainers.DockerContainer
}

// StartReplicated creates the network and the members, and returns once
// every replica is in sync and every sentinel knows its replica. The
// masters are declared new (MarkNew). On error it removes whatever it
// created.
func StartReplicated(ctx context.Context, cfg ReplicatedConfig) (_ *Replicated, err error) {
	if cfg.Members <= 0 {
		cfg.Members = 3
	}
	if cfg.Image == "" {
		cfg.Image = Image()
	}
	if cfg.Logger == nil {
		cfg.Logger = log.NewNoopLogger()
	}
	r := &Replicated{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Close(context.WithoutCancel(ctx)))
		}
	}()
	if r.docker, err = testcontainers.NewDockerClientWithOpts(ctx); err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	subnet, err := r.fixedNetwork(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.layOut(subnet); err != nil {
		return nil, err
	}
	if err := r.each(func(m *member) error { return r.startData(ctx, m) }); err != nil {
		return nil, err
	}
	if err := r.MarkNew(ctx, r.all()...); err != nil {
		return nil, err
	}
	if err := r.each(func(m *member) error { return r.startSentinel(ctx, m) }); err != nil {
		return nil, err
	}
	return r, nil
}

// fixedNetwork creates the network with a subnet named in its request,
// which Docker asks for fixed addresses: the subnet Docker picks for a
// network created without one (free, and clear of the host's routes).
func (r *Replicated) fixedNetwork(ctx context.Context) (netip.Prefix, error) {
	labels := tcnetwork.WithLabels(map[string]string{Label: "1"})
	probe, err := tcnetwork.New(ctx, labels)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("create network: %w", err)
	}
	inspect, err := r.docker.NetworkInspect(ctx, probe.ID, client.NetworkInspectOptions{})
	err = errors.Join(err, probe.Remove(ctx))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("pick a subnet: %w", err)
	}
	var subnet netip.Prefix
	for _, c := range inspect.Network.IPAM.Config {
		if c.Subnet.Addr().Is4() && c.Subnet.Bits() <= 24 {
			subnet = c.Subnet
		}
	}
	if !subnet.IsValid() {
		return subnet, fmt.Errorf("pick a subnet: Docker gave none of /24 or wider: %+v", inspect.Network.IPAM.Config)
	}
	r.net, err = tcnetwork.New(ctx, labels,
		tcnetwork.WithIPAM(&dockernet.IPAM{Config: []dockernet.IPAMConfig{{Subnet: subnet}}}))
	if err != nil {
		return subnet, fmt.Errorf("create network on %v: %w", subnet, err)
	}
	return subnet, nil
}

// layOut names the members' containers, gives them addresses
// (member i's at .(10i+11), .(10i+12), its sentinel's at .(10i+13)) and
// ports on the host, and sets the data containers' arguments.
func (r *Replicated) layOut(subnet netip.Prefix) error {
	ports, err := freePorts(3 * r.cfg.Members)
	if err != nil {
		return err
	}
	base := subnet.Masked().Addr().As4()
	at := func(i, k int) netip.Addr {
		a := base
		a[3] += byte(10*i + 11 + k)
		return netip.AddrFrom4(a)
	}
	for i := range r.cfg.Members {
		m := &member{index: i, down: -1, cut: -1}
		for k, slot := range []string{"a", "b"} {
			// No delay before a full sync: a restarted node is a replica
			// again within a second, not after repl-diskless-sync-delay's 5 s.
			m.data[k] = &box{alias: fmt.Sprintf("member%d-%s", i+1, slot), ip: at(i, k), port: ports[3*i+k],
				args: []string{"/etc/redis/redis.conf", "--repl-diskless-sync-delay", "0"}}
		}
		m.sentinel = &box{alias: fmt.Sprintf("sentinel%d", i+1), ip: at(i, 2), port: ports[3*i+2]}
		r.members = append(r.members, m)
	}
	return nil
}

// startData starts m's two redis-servers and makes the second the first's
// replica, in sync.
func (r *Replicated) startData(ctx context.Context, m *member) error {
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for k, b := range m.data {
		wg.Go(func() {
			errs[k] = r.run(ctx, b, redisPort, "Ready to accept connections")
			if errs[k] == nil {
				errs[k] = waitPing(ctx, b)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", m.name(), err)
	}
	if err := r.replicate(ctx, m, 1, 0); err != nil && !errors.Is(err, errRepointed) {
		return err
	}
	return nil
}

// startSentinel starts m's sentinel on its current master and waits until
// it knows the replica: before that a dead master has no one to fail over to.
func (r *Replicated) startSentinel(ctx context.Context, m *member) error {
	name, ip := m.name(), m.data[0].ip.String()
	m.sentinel.args = []string{"/etc/redis/sentinel.conf", "--sentinel",
		"--sentinel", "monitor", name, ip, "6379", "1",
		"--sentinel", "down-after-milliseconds", name, strconv.Itoa(int(DownAfter.Milliseconds())),
		"--sentinel", "failover-timeout", name, strconv.Itoa(int(failoverTimeout.Milliseconds()))}
	if err := r.run(ctx, m.sentinel, sentinelTCP, "+monitor master"); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return r.settle(ctx, m)
}

// run creates b's container and waits for its log line ready.
func (r *Replicated) run(ctx context.Context, b *box, port dockernet.Port, ready string) error {
	binding := dockernet.PortBinding{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(b.port)}
	ctr, err := testcontainers.Run(ctx, r.cfg.Image,
		testcontainers.WithLogger(r.cfg.Logger),
		testcontainers.WithCmd(b.args...),
		testcontainers.WithExposedPorts(port.String()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = dockernet.PortMap{port: {binding}}
		}),
		tcnetwork.WithNetwork([]string{b.alias}, r.net),
		testcontainers.WithEndpointSettingsModifier(func(settings map[string]*dockernet.EndpointSettings) {
			settings[r.net.Name].IPAMConfig = &dockernet.EndpointIPAMConfig{IPv4Address: b.ip}
		}),
		testcontainers.WithLabels(map[string]string{Label: "1"}),
		testcontainers.WithWaitStrategy(wait.ForLog(ready).WithStartupTimeout(readyTimeout)),
	)
	if ctr != nil {
		b.ctr = ctr // set even on error, so that Close removes it
	}
	if err != nil {
		return fmt.Errorf("%s: start container: %w", b.alias, err)
	}
	return nil
}

// Close removes every container and the network. It is safe to call on a
// partly started topology, and with any faults still in place.
func (r *Replicated) Close(ctx context.Context) error {
	var boxes []*box
	for _, m := range r.members {
		boxes = append(boxes, m.data[0], m.data[1], m.sentinel)
	}
	errs := make([]error, len(boxes)+2)
	var wg sync.WaitGroup
	for j, b := range boxes {
		wg.Go(func() { errs[j] = r.remove(ctx, b) })
	}
	wg.Wait()
	if r.net != nil {
		if err := r.net.Remove(ctx); err != nil {
			errs[len(boxes)] = fmt.Errorf("remove network: %w", err)
		}
	}
	if r.docker != nil {
		errs[len(boxes)+1] = r.docker.Close()
	}
	return errors.Join(errs...)
}

// remove deletes b's container whatever its state (paused included).
func (r *Replicated) remove(ctx context.Context, b *box) error {
	if b.ctr == nil {
		return nil
	}
	id := b.ctr.GetContainerID()
	_, _ = r.docker.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	if _, err := r.docker.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		return fmt.Errorf("%s: remove container: %w", b.alias, err)
	}
	b.ctr = nil
	return nil
}

// each runs f on every member at once.
func (r *Replicated) each(f func(*member) error) error {
	errs := make([]error, len(r.members))
	var wg sync.WaitGroup
	for i, m := range r.members {
		wg.Go(func() { errs[i] = f(m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Replicated) all() []int {
	all := make([]int, len(r.members))
	for i := range all {
		all[i] = i
	}
	return all
}

// N is the number of members.
func (r *Replicated) N() int { return len(r.members) }

// Name is member i's master name in Sentinel.
func (r *Replicated) Name(i int) string { return r.members[i].name() }

func (m *member) name() string { return fmt.Sprintf("member%d", m.index+1) }

// SentinelAddr is member i's sentinel on the host: 127.0.0.1 and its
// published port.
func (r *Replicated) SentinelAddr(i int) string { return r.members[i].sentinel.hostAddr() }

// Routes maps the address of every redis-server as Sentinel gives it (its
// address on the network, port 6379) to where the host reaches it (its
// published port on 127.0.0.1).
func (r *Replicated) Routes() map[string]string {
	routes := map[string]string{}
	for _, m := range r.members {
		for _, b := range m.data {
			routes[b.netAddr()] = b.hostAddr()
		}
	}
	return routes
}

// Data lists every redis-server's address on the network: member i's at
// 2i and 2i+1.
func (r *Replicated) Data() []string {
	var addrs []string
	for _, m := range r.members {
		addrs = append(addrs, m.data[0].netAddr(), m.data[1].netAddr())
	}
	return addrs
}

func (b *box) netAddr() string  { return net.JoinHostPort(b.ip.String(), "6379") }
func (b *box) hostAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// FailoverOptions are go-redis's options for member i: its master name
// and its sentinel, and a dialer that reaches the redis-server Sentinel
// names through route (a map from Routes, or another with the same keys);
// an address route lacks (the sentinel's) is dialled as it is. The
// caller sets the timeouts.
func (r *Replicated) FailoverOptions(i int, route map[string]string) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:    r.Name(i),
		SentinelAddrs: []string{r.SentinelAddr(i)},
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := route[addr]; ok {
				addr = to
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// admin returns a plain client of b, for checks and commands outside the library.
func (b *box) admin() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: b.hostAddr(), DialTimeout: 250 * time.Millisecond,
		ReadTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
}

// waitPing waits until b answers PING through its published port.
func waitPing(ctx context.Context, b *box) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	rdb := b.admin()
	defer rdb.Close()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (%s) not ready: %w", b.alias, b.hostAddr(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// MarkNew declares the current master of each of members new, as
// Cluster.MarkNew does; the marker reaches the replica by replication.
func (r *Replicated) MarkNew(ctx context.Context, members ...int) error {
	for _, i := range members {
		m := r.members[i]
		k, err := r.master(ctx, m)
		if err != nil {
			return err
		}
		admin := m.data[k].admin()
		err = markProcess(ctx, admin)
		_ = admin.Close()
		if err != nil {
			return fmt.Errorf("%s: mark %s new: %w", m.name(), m.data[k].alias, err)
		}
	}
	return nil
}
