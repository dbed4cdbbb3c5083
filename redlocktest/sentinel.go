package redlocktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// Sentinel timings: a dead master is down after downAfter, and promoted a
// second or two later. failoverTimeout is long on purpose: past it,
// Sentinel repoints a replica that replicates through a proxy straight to
// its master (+fix-slave-config), which would heal a Cut link.
const (
	downAfter       = 1000 * time.Millisecond
	failoverTimeout = 120 * time.Second
)

// SentinelMember is one member of a lock's node set as Sentinel runs it: a
// master (declared new), its replica and a redis-sentinel watching them.
type SentinelMember struct {
	Name     string // the master's name in Sentinel
	Master   *redisproc.Server
	Replica  *redisproc.Server
	Link     *faultproxy.Proxy // the replica's replication link: Cut it and the replica misses writes
	Sentinel *redisproc.Server
}

// StartSentinel starts n members, each a master, one replica in sync
// through a fault proxy and a sentinel that knows both. Everything stops
// at cleanup.
func StartSentinel(t testing.TB, n int) []*SentinelMember {
	t.Helper()
	binary := RequireRedis(t)
	base := t.TempDir()
	members := make([]*SentinelMember, n)
	for i := range members {
		dir := filepath.Join(base, fmt.Sprintf("member%d", i))
		master, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(dir, "master"), Binary: binary})
		if err != nil {
			t.Fatalf("redlocktest: start master %d: %v", i, err)
		}
		t.Cleanup(func() { _ = master.Kill() })
		m := &SentinelMember{Name: fmt.Sprintf("member%d", i), Master: master}
		m.Replica, m.Link, _ = StartReplica(t, newClient(t, master.Addr(), adminTimeout))
		m.Sentinel = startSentinel(t, binary, filepath.Join(dir, "sentinel"), m)
		members[i] = m
	}
	for _, m := range members {
		m.waitReplicaKnown(t)
	}
	return members
}

// startSentinel writes a sentinel.conf watching m's master and starts
// redis-server on it in sentinel mode.
func startSentinel(t testing.TB, binary, dir string, m *SentinelMember) *redisproc.Server {
	t.Helper()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 1\n"+
		"sentinel down-after-milliseconds %[1]s %[3]d\nsentinel failover-timeout %[1]s %[4]d\n",
		m.Name, m.Master.Port(), downAfter.Milliseconds(), failoverTimeout.Milliseconds())
	// redis-server reads a config file only as its first argument, and
	// redisproc puts its own flags first: a wrapper puts the file back in front.
	wrapper := filepath.Join(dir, "sentinel.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' '%s' --sentinel \"$@\"\n", binary, conf)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sentinel, err := redisproc.Start(redisproc.Config{Dir: dir, Binary: wrapper, Undeclared: true})
	if err != nil {
		t.Fatalf("redlocktest: start sentinel of %s: %v", m.Name, err)
	}
	t.Cleanup(func() { _ = sentinel.Kill() })
	return sentinel
}

// waitReplicaKnown waits until the sentinel has found the replica and
// reaches it: before that, a dead master has no one to fail over to.
func (m *SentinelMember) waitReplicaKnown(t testing.TB) {
	t.Helper()
	admin := m.admin(t)
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		replicas, err := admin.Replicas(ctx, m.Name).Result()
		for _, r := range replicas {
			if net.JoinHostPort(r["ip"], r["port"]) == m.Replica.Addr() && r["flags"] == "slave" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redlocktest: sentinel of %s does not know its replica: %v %v", m.Name, replicas, err)
		}
	}
}

// admin returns a client of the member's sentinel, closed at cleanup.
func (m *SentinelMember) admin(t testing.TB) *redis.SentinelClient {
	admin := redis.NewSentinelClient(clientOptions(m.Sentinel.Addr(), adminTimeout))
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// Client returns a failover client of the member (its master name and its
// sentinel), with Clients' timeouts and retries; closed at cleanup.
func (m *SentinelMember) Client(t testing.TB) *redis.Client {
	t.Helper()
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: m.Name, SentinelAddrs: []string{m.Sentinel.Addr()},
		DialTimeout: clientTimeout, ReadTimeout: clientTimeout, WriteTimeout: clientTimeout,
		MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// URL returns the member in go-redis's failover URL form:
// redis://<sentinel>?master_name=<name>.
func (m *SentinelMember) URL() string {
	return "redis://" + m.Sentinel.Addr() + "?master_name=" + m.Name
}

// MasterAddr returns the address the sentinel gives for the master now.
func (m *SentinelMember) MasterAddr(t testing.TB) string {
	t.Helper()
	addr, err := masterAddr(m.admin(t), m.Name)
	if err != nil {
		t.Fatalf("redlocktest: SENTINEL GET-MASTER-ADDR-BY-NAME %s: %v", m.Name, err)
	}
	return addr
}

func masterAddr(admin *redis.SentinelClient, name string) (string, error) {
	addr, err := admin.GetMasterAddrByName(context.Background(), name).Result()
	if err == nil && len(addr) != 2 {
		err = fmt.Errorf("answered %q", addr)
	}
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(addr[0], addr[1]), nil
}

// WaitPromoted waits until the sentinel gives the replica as the master,
// and returns when it first did.
func (m *SentinelMember) WaitPromoted(t testing.TB, timeout time.Duration) time.Time {
	t.Helper()
	admin := m.admin(t)
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		addr, err := masterAddr(admin, m.Name)
		if addr == m.Replica.Addr() {
			return time.Now()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(m.Sentinel.Dir(), redisproc.LogFile))
			t.Fatalf("redlocktest: %s not failed over after %v: master %s (%v)\n%s", m.Name, timeout, addr, err,
				strings.TrimSpace(string(log)))
		}
	}
}

// WaitReplicated waits until the replica has every write the master took
// so far (WAIT), as a replica long in sync has.
func (m *SentinelMember) WaitReplicated(t testing.TB) {
	t.Helper()
	master := redis.NewClient(clientOptions(m.Master.Addr(), adminTimeout))
	defer master.Close()
	acked, err := master.Do(context.Background(), "WAIT", 1, (adminTimeout / 2).Milliseconds()).Int()
	if err != nil || acked != 1 {
		t.Fatalf("redlocktest: WAIT on the master of %s: %d replicas, %v", m.Name, acked, err)
	}
}
