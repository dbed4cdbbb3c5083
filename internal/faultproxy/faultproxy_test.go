package faultproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/faultproxy"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

// quiet drops go-redis's log lines about the connections we break on purpose.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

const timeout = 200 * time.Millisecond

// setup starts one redis-server and a proxy in front of it, both stopped
// at cleanup, and returns the proxy, a client through it and a direct one.
func setup(t *testing.T) (*faultproxy.Proxy, *redis.Client, *redis.Client, *redistest.Cluster) {
	t.Helper()
	cluster := redistest.Start(t, 1)
	proxy := newProxy(t, cluster.Nodes[0].Addr())
	return proxy, newRedis(t, proxy.Addr()), cluster.Admin(t, 0), cluster
}

func newProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	proxy, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := proxy.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return proxy
}

// newRedis is a client that fails fast: short timeouts, no retries.
func newRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{
		Addr:                     addr,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		MaxRetries:               -1,
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func ping(client *redis.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := client.Ping(ctx).Err()
	return time.Since(start), err
}

func mustPing(t *testing.T, client *redis.Client) time.Duration {
	t.Helper()
	elapsed, err := ping(client)
	if err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	return elapsed
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// rawCommand sends one inline command on conn.
func rawCommand(t *testing.T, conn net.Conn, line string) {
	t.Helper()
	if _, err := io.WriteString(conn, line+"\r\n"); err != nil {
		t.Fatalf("write %q: %v", line, err)
	}
}

func rawReply(conn net.Conn, reader *bufio.Reader, within time.Duration) (string, error) {
	if err := conn.SetReadDeadline(time.Now().Add(within)); err != nil {
		return "", err
	}
	line, err := reader.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestProxy_forwards(t *testing.T) {
	proxy, client, direct, _ := setup(t)
	ctx := context.Background()
	mustPing(t, client)
	if err := client.Set(ctx, "through", "proxy", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := direct.Get(ctx, "through").Result(); err != nil || got != "proxy" {
		t.Fatalf("direct GET: %q, %v", got, err)
	}
	if proxy.Conns() == 0 {
		t.Fatal("no connection counted through the proxy")
	}
	if proxy.Target() == proxy.Addr() {
		t.Fatal("the proxy listens on its target's address")
	}
}

func TestProxy_cutStallsThenHealWorks(t *testing.T) {
	proxy, client, direct, _ := setup(t)
	mustPing(t, client)

	proxy.Cut()
	if !proxy.Cuts() {
		t.Fatal("Cuts() is false after Cut")
	}
	// An open connection stalls: a timeout, not a network error.
	if _, err := ping(client); !isTimeout(err) {
		t.Fatalf("PING on a cut link: %v, want a timeout", err)
	}
	// A new connection is accepted, and stalls too.
	if _, err := ping(newRedis(t, proxy.Addr())); !isTimeout(err) {
		t.Fatalf("PING on a new connection over a cut link: %v, want a timeout", err)
	}
	// Bytes sent during the cut are held, not lost: the command runs when
	// the partition heals, and its reply arrives then.
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)
	rawCommand(t, conn, "SET held 1")
	if reply, err := rawReply(conn, reader, timeout); !isTimeout(err) {
		t.Fatalf("reply over a cut link: %q, %v; want a timeout", reply, err)
	}
	if n, err := direct.Exists(context.Background(), "held").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS held during the cut: %d, %v; want 0", n, err)
	}

	proxy.Heal()
	mustPing(t, client)
	if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != "+OK" {
		t.Fatalf("held SET after Heal: %q, %v; want +OK", reply, err)
	}
	if n, err := direct.Exists(context.Background(), "held").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS held after Heal: %d, %v; want 1", n, err)
	}
}

func TestProxy_dropRepliesRunsTheCommandSilently(t *testing.T) {
	proxy, client, direct, _ := setup(t)
	ctx := context.Background()
	mustPing(t, client)

	proxy.DropReplies(true)
	err := client.Set(ctx, "silent", "ran", 0).Err()
	if !isTimeout(err) {
		t.Fatalf("SET with replies dropped: %v, want a timeout", err)
	}
	if got, err := direct.Get(ctx, "silent").Result(); err != nil || got != "ran" {
		t.Fatalf("direct GET silent: %q, %v; the command must have run", got, err)
	}

	proxy.DropReplies(false)
	mustPing(t, client)
}

// A connection that lost a reply stays mute: the rest of the stream would
// be read as the answer to the wrong command.
func TestProxy_dropRepliesMutesTheConnectionForGood(t *testing.T) {
	proxy, _, _, _ := setup(t)
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)
	proxy.DropReplies(true)
	rawCommand(t, conn, "PING")
	if reply, err := rawReply(conn, reader, timeout); !isTimeout(err) {
		t.Fatalf("reply while dropped: %q, %v", reply, err)
	}
	proxy.DropReplies(false)
	rawCommand(t, conn, "PING")
	if reply, err := rawReply(conn, reader, timeout); !isTimeout(err) {
		t.Fatalf("a muted connection answered: %q, %v", reply, err)
	}
	fresh := dial(t, proxy.Addr())
	rawCommand(t, fresh, "PING")
	if reply, err := rawReply(fresh, bufio.NewReader(fresh), time.Second); err != nil || reply != "+PONG" {
		t.Fatalf("PING on a new connection: %q, %v", reply, err)
	}
}

func TestProxy_latencyDelaysReplies(t *testing.T) {
	proxy, _, _, _ := setup(t)
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)
	rawPing := func() time.Duration {
		t.Helper()
		start := time.Now()
		rawCommand(t, conn, "PING")
		if reply, err := rawReply(conn, reader, 2*time.Second); err != nil || reply != "+PONG" {
			t.Fatalf("PING: %q, %v", reply, err)
		}
		return time.Since(start)
	}
	base := rawPing()

	const latency = 120 * time.Millisecond
	proxy.SetLatency(latency)
	for range 3 {
		elapsed := rawPing()
		if elapsed < latency || elapsed > latency+80*time.Millisecond {
			t.Fatalf("PING with %v latency took %v (%v without)", latency, elapsed, base)
		}
		t.Logf("PING: %v with %v latency, %v without", elapsed, latency, base)
	}
	proxy.SetLatency(0)
	if elapsed := rawPing(); elapsed >= latency {
		t.Fatalf("PING after SetLatency(0) took %v", elapsed)
	}
}

func TestProxy_resetBreaksConnectionsThenReconnects(t *testing.T) {
	proxy, client, _, _ := setup(t)
	mustPing(t, client)
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)
	rawCommand(t, conn, "PING")
	if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != "+PONG" {
		t.Fatalf("raw PING: %q, %v", reply, err)
	}

	if n := proxy.Reset(); n < 2 {
		t.Fatalf("Reset reset %d connections, want at least 2", n)
	}
	if _, err := rawReply(conn, reader, time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Reset: %v, want ECONNRESET", err)
	}
	mustPing(t, client) // go-redis notices the dead pooled connection and dials again

	// A command in flight when the connection is reset fails at once, with
	// a connection error (go-redis reports the RST as EOF), not a timeout.
	failed := make(chan error, 1)
	go func() {
		failed <- client.BLPop(context.Background(), 5*time.Second, "never").Err()
	}()
	waitFor(t, func() bool { return proxy.Conns() >= 1 })
	time.Sleep(50 * time.Millisecond) // let BLPOP reach the server
	start := time.Now()
	proxy.Reset()
	if err := <-failed; err == nil || isTimeout(err) {
		t.Fatalf("BLPOP in flight during Reset: %v, want a connection error", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("BLPOP failed %v after Reset", elapsed)
	}
	mustPing(t, client)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProxy_targetDown(t *testing.T) {
	proxy, client, _, cluster := setup(t)
	mustPing(t, client)
	if err := cluster.Nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(newRedis(t, proxy.Addr())); err == nil || isTimeout(err) {
		t.Fatalf("PING through a proxy to a dead target: %v, want a connection error", err)
	}
	// Behind a partition, a dead target cannot be told from a slow one.
	proxy.Cut()
	stalled := newRedis(t, proxy.Addr())
	if _, err := ping(stalled); !isTimeout(err) {
		t.Fatalf("PING to a dead target over a cut link: %v, want a timeout", err)
	}
	proxy.Heal()
	if err := cluster.Nodes[0].Restart(false); err != nil {
		t.Fatal(err)
	}
	mustPing(t, newRedis(t, proxy.Addr()))
}

// Close returns promptly even with connections stalled by a cut, and every
// goroutine is gone (TestMain checks with goleak).
func TestProxy_closeStopsEverything(t *testing.T) {
	cluster := redistest.Start(t, 1)
	proxy, err := faultproxy.New(cluster.Nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	client := newRedis(t, proxy.Addr())
	mustPing(t, client)
	proxy.Cut()
	proxy.SetLatency(time.Hour)
	stalled := dial(t, proxy.Addr())
	rawCommand(t, stalled, "PING")
	start := time.Now()
	if err := proxy.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("Close took %v", elapsed)
	}
	if err := proxy.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if conn, err := net.DialTimeout("tcp", proxy.Addr(), timeout); err == nil {
		_ = conn.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
}

func TestNew_errors(t *testing.T) {
	if _, err := faultproxy.New(""); err == nil || !strings.HasPrefix(err.Error(), "faultproxy:") {
		t.Fatalf("New(\"\"): %v", err)
	}
}
