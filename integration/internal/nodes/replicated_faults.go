package nodes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	dockernet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// Fault is a fault of one member of a Replicated topology, until healed.
type Fault string

// The member faults.
const (
	// Failover kills the member's master (SIGKILL): its sentinel promotes
	// the replica. Heal waits for the promotion, then starts the old master
	// again, empty, as the new master's replica.
	Failover Fault = "failover"
	// Cut cuts the replica's replication link: from then on it misses every
	// write. Heal gives the link back and the replica catches up. A
	// Failover injected on a cut member promotes a replica that missed
	// every grant since the cut (Heal then gives the link back too).
	Cut Fault = "cut replication"
	// ManualFailover is SENTINEL FAILOVER: the replica is promoted while the
	// old master still runs, until it is made the new one's replica.
	ManualFailover Fault = "sentinel failover"
	// PauseMaster freezes the master: past DownAfter its sentinel fails it
	// over. Heal unpauses it.
	PauseMaster Fault = "pause master"
	// DisconnectMaster takes the master off the network, with the same
	// effect. Heal reconnects it at its address.
	DisconnectMaster Fault = "disconnect master"
	// KillReplica kills the replica; Heal starts it again, empty, to sync.
	KillReplica Fault = "kill replica"
)

// Faults lists every member fault.
var Faults = []Fault{Failover, Cut, ManualFailover, PauseMaster, DisconnectMaster, KillReplica}

// Split reports whether, under f, a master the member no longer uses may
// still grant beside its successor: the old master of a manual failover,
// a paused or disconnected one that was failed over, until it is made a
// replica. What it grants then is lost, so a caller that keeps a member
// faulty until every lease that member granted has ended counts it faulty
// for a TTL after Heal.
func (f Fault) Split() bool { return f == ManualFailover || f == PauseMaster || f == DisconnectMaster }

// settleTimeout bounds the wait for a member to be whole after a heal:
// a failover, a restart and a full sync of a few keys.
const settleTimeout = 30 * time.Second

// Inject puts member i under fault f.
func (r *Replicated) Inject(ctx context.Context, i int, f Fault) error {
	m := r.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fault != "" && (m.fault != Cut || f != Failover) {
		return fmt.Errorf("%s: %w (%s)", m.name(), ErrFaulty, m.fault)
	}
	master, err := r.master(ctx, m)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", m.name(), f, err)
	}
	replica := 1 - master
	switch f {
	case Failover:
		m.down, err = master, r.kill(ctx, m.data[master])
	case Cut:
		if replica, err = r.replicaOf(ctx, m); err == nil {
			m.cut, err = replica, cutLink(ctx, m.data[replica])
		}
	case ManualFailover:
		m.down, err = master, r.sentinelFailover(ctx, m)
	case PauseMaster:
		m.down = master
		_, err = r.docker.ContainerPause(ctx, m.data[master].ctr.GetContainerID(), client.ContainerPauseOptions{})
	case DisconnectMaster:
		m.down = master
		_, err = r.docker.NetworkDisconnect(ctx, r.net.ID, client.NetworkDisconnectOptions{
			Container: m.data[master].ctr.GetContainerID(), Force: true})
	case KillReplica:
		m.down, err = replica, r.kill(ctx, m.data[replica])
	default:
		err = errors.New("unknown fault")
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", m.name(), f, err)
	}
	m.fault = f
	return nil
}

// Heal ends member i's fault, if any, and waits until the member is whole
// again (settle).
func (r *Replicated) Heal(ctx context.Context, i int) error {
	m := r.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fault == "" {
		return nil
	}
	if err := r.lift(ctx, m); err != nil {
		return fmt.Errorf("%s: heal %s: %w", m.name(), m.fault, err)
	}
	m.fault, m.down = "", -1
	return r.settle(ctx, m)
}

// lift undoes what Inject did to m.
func (r *Replicated) lift(ctx context.Context, m *member) error {
	var err error
	switch m.fault {
	case Failover, ManualFailover:
		// Started again only once the replica is promoted: back earlier and
		// empty, the old master would still be the master, and its replica
		// would sync the loss from it.
		if err = r.waitMaster(ctx, m, 1-m.down); err == nil && m.fault == Failover {
			err = r.start(ctx, m.data[m.down])
		}
	case KillReplica:
		err = r.start(ctx, m.data[m.down])
	case PauseMaster:
		_, err = r.docker.ContainerUnpause(ctx, m.data[m.down].ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	case DisconnectMaster:
		b := m.data[m.down]
		_, err = r.docker.NetworkConnect(ctx, r.net.ID, client.NetworkConnectOptions{Container: b.ctr.GetContainerID(),
			EndpointConfig: &dockernet.EndpointSettings{Aliases: []string{b.alias},
				IPAMConfig: &dockernet.EndpointIPAMConfig{IPv4Address: b.ip}}})
	}
	if err == nil && m.cut >= 0 {
		if err = uncut(ctx, m.data[m.cut]); err == nil {
			m.cut = -1
		}
	}
	return err
}

// HealAll heals every member, all at once.
func (r *Replicated) HealAll(ctx context.Context) error {
	return r.each(func(m *member) error { return r.Heal(ctx, m.index) })
}

// Fault is member i's current fault, "" when whole.
func (r *Replicated) Fault(i int) Fault {
	m := r.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fault
}

// WaitFailedOver waits until member i, under Failover, has a new master:
// its sentinel names the replica.
func (r *Replicated) WaitFailedOver(ctx context.Context, i int) error {
	m := r.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fault != Failover {
		return fmt.Errorf("%s: not failing over (%q)", m.name(), m.fault)
	}
	return r.waitMaster(ctx, m, 1-m.down)
}

func (r *Replicated) kill(ctx context.Context, b *box) error {
	_, err := r.docker.ContainerKill(ctx, b.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
	return err
}

// start starts b's stopped container again and waits until it answers.
func (r *Replicated) start(ctx context.Context, b *box) error {
	if _, err := r.docker.ContainerStart(ctx, b.ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return err
	}
	return waitPing(ctx, b)
}

// replicaOf is the box of m that is a replica now. Right after a heal's
// failover the sentinel can name one master while the boxes' roles are
// still changing: ask both again until one says it is a replica, up to
// settleTimeout.
func (r *Replicated) replicaOf(ctx context.Context, m *member) (int, error) {
	for deadline := time.Now().Add(settleTimeout); ; time.Sleep(50 * time.Millisecond) {
		master, err := r.master(ctx, m)
		if err == nil {
			admin := m.data[1-master].admin()
			info, infoErr := replication(ctx, admin)
			_ = admin.Close()
			if infoErr == nil && info["role"] == "slave" {
				return 1 - master, nil
			}
			err = fmt.Errorf("box %d, named replica, answers role %q (%v)", 1-master, info["role"], infoErr)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("%s: no replica to cut after %v: %w", m.name(), settleTimeout, err)
		}
	}
}

// cutLink makes b, a replica, lose its replication link and fail to get
// it back: it logs in to its master as a user that does not exist, and
// its link is closed. Nothing changes on the master.
func cutLink(ctx context.Context, b *box) error {
	admin := b.admin()
	defer admin.Close()
	if err := admin.Do(ctx, "CONFIG", "SET", "masteruser", "redlock-cut", "masterauth", "redlock-cut").Err(); err != nil {
		return err
	}
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := replication(ctx, admin)
		if err == nil && info["master_link_status"] == "down" {
			return nil
		}
		if err != nil || time.Now().After(deadline) {
			return fmt.Errorf("%s: replication link still %q after the cut (%v)", b.alias, info["master_link_status"], err)
		}
	}
}

// uncut gives b its login to any master back, in its config file too (a
// promoted replica's file was rewritten with the cut one).
func uncut(ctx context.Context, b *box) error {
	admin := b.admin()
	defer admin.Close()
	if err := admin.Do(ctx, "CONFIG", "SET", "masteruser", "", "masterauth", "").Err(); err != nil {
		return err
	}
	return admin.Do(ctx, "CONFIG", "REWRITE").Err()
}

// sentinelFailover asks m's sentinel for a failover, again while it
// answers that it has no replica fit for it yet (its view of a replica
// back from a fault lags by up to a second) or one is under way.
func (r *Replicated) sentinelFailover(ctx context.Context, m *member) error {
	s := m.sentinelClient()
	defer s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := s.Failover(ctx, m.name()).Err()
		if err == nil || time.Now().After(deadline) ||
			!strings.Contains(err.Error(), "NOGOODSLAVE") && !strings.Contains(err.Error(), "INPROG") {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (m *member) sentinelClient() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: m.sentinel.hostAddr(), DialTimeout: 250 * time.Millisecond,
		ReadTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
}

// master asks m's sentinel which data container is the master: an error
// while it deems the master down or fails it over. Before the sentinel
// runs, the first one is.
func (r *Replicated) master(ctx context.Context, m *member) (int, error) {
	if m.sentinel.ctr == nil {
		return 0, nil
	}
	s := m.sentinelClient()
	defer s.Close()
	state, err := s.Master(ctx, m.name()).Result()
	if err != nil {
		return -1, fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	if state["flags"] != "master" {
		return -1, fmt.Errorf("Sentinel's master %s is %s", state["ip"], state["flags"])
	}
	for k, b := range m.data {
		if state["ip"] == b.ip.String() {
			return k, nil
		}
	}
	return -1, fmt.Errorf("Sentinel's master %s is none of the member's", state["ip"])
}

// Master is the index in Data of member i's master, as its sentinel says.
func (r *Replicated) Master(ctx context.Context, i int) (int, error) {
	k, err := r.master(ctx, r.members[i])
	return 2*i + k, err
}

// waitMaster waits until m's sentinel names data container k the master.
func (r *Replicated) waitMaster(ctx context.Context, m *member, k int) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		got, err := r.master(ctx, m)
		if got == k {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not promoted after %v: master %d (%v)", m.data[k].alias, settleTimeout, got, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settle waits until m is whole: its sentinel names a master that runs as
// one, and the other data container is its replica, in sync, and known
// to the sentinel as one fit to promote.
func (r *Replicated) settle(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		err := r.whole(ctx, m)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not whole after %v: %w", m.name(), settleTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// whole checks m once, nil when whole. A data container that runs as a
// master beside Sentinel's (back empty from a kill, or failed over while
// frozen or cut off) is made its replica at once, as an operator would,
// rather than after the 8 s Sentinel waits before it does so.
func (r *Replicated) whole(ctx context.Context, m *member) error {
	k, err := r.master(ctx, m)
	if err != nil {
		return err
	}
	master, replica := m.data[k], m.data[1-k]
	if err := r.replicate(ctx, m, 1-k, k); err != nil {
		return err
	}
	admin := master.admin()
	info, err := replication(ctx, admin)
	_ = admin.Close()
	if err != nil || info["role"] != "master" {
		return fmt.Errorf("%s, Sentinel's master, runs as %q (%v)", master.alias, info["role"], err)
	}
	s := m.sentinelClient()
	defer s.Close()
	known, err := s.Replicas(ctx, m.name()).Result()
	for _, state := range known {
		if state["ip"] == replica.ip.String() && state["flags"] == "slave" {
			return nil
		}
	}
	return fmt.Errorf("Sentinel does not see %s as a replica fit to promote: %v (%v)", replica.alias, known, err)
}

// replicate makes m's data container k the replica of container of,
// unless it already is one, and checks that its link is up.
func (r *Replicated) replicate(ctx context.Context, m *member, k, of int) error {
	b, master := m.data[k], m.data[of].ip.String()
	admin := b.admin()
	defer admin.Close()
	info, err := replication(ctx, admin)
	if err != nil {
		return err
	}
	if info["role"] != "slave" || info["master_host"] != master {
		if err := admin.Do(ctx, "REPLICAOF", master, "6379").Err(); err != nil {
			return fmt.Errorf("%s: REPLICAOF %s: %w", b.alias, master, err)
		}
		return fmt.Errorf("%s: %w %s", b.alias, errRepointed, master)
	}
	if info["master_link_status"] != "up" {
		return fmt.Errorf("%s: replication link %s", b.alias, info["master_link_status"])
	}
	return nil
}

// Behind is how far member i's replica lags its master, in bytes of the
// replication stream: a replica whose link is cut falls behind with every
// write its master takes, the grants among them.
func (r *Replicated) Behind(ctx context.Context, i int) (int64, error) {
	m := r.members[i]
	k, err := r.master(ctx, m)
	if err != nil {
		return 0, err
	}
	var offsets [2]int64
	for j, b := range []*box{m.data[k], m.data[1-k]} {
		admin := b.admin()
		info, err := replication(ctx, admin)
		_ = admin.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", b.alias, err)
		}
		if offsets[j], err = strconv.ParseInt(info["master_repl_offset"], 10, 64); err != nil {
			return 0, fmt.Errorf("%s: master_repl_offset: %w", b.alias, err)
		}
	}
	return offsets[0] - offsets[1], nil
}

// errRepointed: replicate has just made a container a replica.
var errRepointed = errors.New("made a replica of")

// replication reads INFO replication into its fields.
func replication(ctx context.Context, admin *redis.Client) (map[string]string, error) {
	text, err := admin.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[name] = value
		}
	}
	return fields, nil
}

// FailOver kills the masters of members at once and waits until each
// member's sentinel has promoted its replica: with their replicas cut
// first (Inject Cut), the new masters lack every grant since the cut.
func (r *Replicated) FailOver(ctx context.Context, members ...int) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for j, i := range members {
		wg.Go(func() {
			if errs[j] = r.Inject(ctx, i, Failover); errs[j] == nil {
				errs[j] = r.WaitFailedOver(ctx, i)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
