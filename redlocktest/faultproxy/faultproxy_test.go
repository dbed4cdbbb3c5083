package faultproxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
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
func setup(t *testing.T) (*faultproxy.Proxy, *redis.Client, *redis.Client, *redlocktest.Nodes) {
	t.Helper()
	cluster := redlocktest.Start(t, 1)
	proxy := newProxy(t, cluster.Servers[0].Addr())
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
	if err := cluster.Servers[0].Kill(); err != nil {
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
	if err := cluster.Servers[0].Restart(false); err != nil {
		t.Fatal(err)
	}
	mustPing(t, newRedis(t, proxy.Addr()))
}

// Close returns promptly even with connections stalled by a cut, and every
// goroutine is gone (TestMain checks with goleak).
func TestProxy_closeStopsEverything(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	proxy, err := faultproxy.New(cluster.Servers[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	client := newRedis(t, proxy.Addr())
	mustPing(t, client)
	proxy.Cut()
	proxy.SetLatency(time.Hour)
	stalled := dial(t, proxy.Addr())
	rawCommand(t, stalled, "PING")
	// Held and delayed one way only, on connections of their own.
	proxy.Heal()
	proxy.SetRequestLatency(time.Hour)
	delayed := dial(t, proxy.Addr())
	rawCommand(t, delayed, "PING")
	proxy.SetRequestLatency(0)
	proxy.HoldRequests(true)
	held := dial(t, proxy.Addr())
	rawCommand(t, held, "PING")
	proxy.HoldRequests(false)
	proxy.HoldReplies(true)
	unanswered := dial(t, proxy.Addr())
	rawCommand(t, unanswered, "PING")
	proxy.HoldRequests(true)
	proxy.Cut()
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

// A held request does not reach the server: the command runs only when the
// hold is lifted, after the client gave up waiting, and the commands held
// run in the order they were sent. Replies to what the server got before
// the hold still arrive, on the same connection.
func TestProxy_holdRequestsRunsCommandsLateInOrder(t *testing.T) {
	proxy, client, direct, _ := setup(t)
	ctx := context.Background()
	mustPing(t, client)
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)

	// A reply on its way back when the hold starts still arrives: BLPOP
	// runs before the hold and answers during it.
	rawCommand(t, conn, "BLPOP wake 2")
	waitFor(t, func() bool {
		n, _ := direct.ClientList(ctx).Result()
		return strings.Contains(n, "cmd=blpop")
	})
	proxy.HoldRequests(true)
	if !proxy.HoldsRequests() || proxy.HoldsReplies() {
		t.Fatalf("HoldsRequests %v, HoldsReplies %v after HoldRequests(true)", proxy.HoldsRequests(), proxy.HoldsReplies())
	}
	if err := direct.RPush(ctx, "wake", "up").Err(); err != nil {
		t.Fatal(err)
	}
	if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != "*2" {
		t.Fatalf("BLPOP's reply during a request hold: %q, %v; want *2", reply, err)
	}
	for _, want := range []string{"$4", "wake", "$2", "up"} {
		if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != want {
			t.Fatalf("BLPOP's reply: %q, %v; want %q", reply, err, want)
		}
	}

	for _, item := range []string{"a", "b", "c"} {
		rawCommand(t, conn, "RPUSH order "+item)
	}
	if _, err := ping(client); !isTimeout(err) {
		t.Fatalf("PING with requests held: %v, want a timeout", err)
	}
	if reply, err := rawReply(conn, reader, timeout); !isTimeout(err) {
		t.Fatalf("reply to a held request: %q, %v; want a timeout", reply, err)
	}
	if n, err := direct.Exists(ctx, "order").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS order with the requests held: %d, %v; want 0: a held command ran", n, err)
	}

	proxy.HoldRequests(false)
	for _, want := range []string{":1", ":2", ":3"} {
		if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != want {
			t.Fatalf("reply after the hold: %q, %v; want %q", reply, err, want)
		}
	}
	if got, err := direct.LRange(ctx, "order", 0, -1).Result(); err != nil || strings.Join(got, "") != "abc" {
		t.Fatalf("LRANGE order: %q, %v; want [a b c]", got, err)
	}
	mustPing(t, client)
}

// A client that gives up on a held request and closes its connection does
// not take the request back: it runs when the hold is lifted, the way a
// delayed packet arrives after its sender moved on.
func TestProxy_heldRequestRunsAfterTheClientClosed(t *testing.T) {
	proxy, _, direct, _ := setup(t)
	ctx := context.Background()
	conn := dial(t, proxy.Addr())
	rawCommand(t, conn, "PING")
	if reply, err := rawReply(conn, bufio.NewReader(conn), time.Second); err != nil || reply != "+PONG" {
		t.Fatalf("PING: %q, %v", reply, err)
	}
	proxy.HoldRequests(true)
	rawCommand(t, conn, "SET orphan late")
	time.Sleep(50 * time.Millisecond) // let the proxy read it
	_ = conn.Close()
	time.Sleep(100 * time.Millisecond)
	if n, err := direct.Exists(ctx, "orphan").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS orphan with the request held: %d, %v; want 0", n, err)
	}
	proxy.HoldRequests(false)
	waitFor(t, func() bool {
		got, err := direct.Get(ctx, "orphan").Result()
		return err == nil && got == "late"
	})
}

// Replies held while the requests flow: each command runs at once, a later
// one too, and the replies arrive only when the hold is lifted, in order.
func TestProxy_holdRepliesWhileLaterRequestsRun(t *testing.T) {
	proxy, client, direct, _ := setup(t)
	ctx := context.Background()
	mustPing(t, client)
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)

	proxy.HoldReplies(true)
	if !proxy.HoldsReplies() || proxy.HoldsRequests() {
		t.Fatalf("HoldsReplies %v, HoldsRequests %v after HoldReplies(true)", proxy.HoldsReplies(), proxy.HoldsRequests())
	}
	counter := func() string {
		t.Helper()
		got, err := direct.Get(ctx, "counter").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		return got
	}
	rawCommand(t, conn, "INCR counter")
	waitFor(t, func() bool { return counter() == "1" })
	if reply, err := rawReply(conn, reader, timeout); !isTimeout(err) {
		t.Fatalf("reply while replies are held: %q, %v; want a timeout", reply, err)
	}
	// A later request runs while the first one's reply is still held.
	rawCommand(t, conn, "INCR counter")
	waitFor(t, func() bool { return counter() == "2" })
	if _, err := ping(client); !isTimeout(err) {
		t.Fatalf("PING with replies held: %v, want a timeout", err)
	}

	proxy.HoldReplies(false)
	for _, want := range []string{":1", ":2"} {
		if reply, err := rawReply(conn, reader, time.Second); err != nil || reply != want {
			t.Fatalf("held reply: %q, %v; want %q", reply, err, want)
		}
	}
	mustPing(t, newRedis(t, proxy.Addr()))
}

// A one-way delay on the requests: the command runs late and its reply
// comes straight back, where SetLatency runs it at once and delays the
// reply.
func TestProxy_requestLatencyRunsCommandsLate(t *testing.T) {
	proxy, _, direct, _ := setup(t)
	ctx := context.Background()
	conn := dial(t, proxy.Addr())
	reader := bufio.NewReader(conn)
	const latency = 150 * time.Millisecond

	// ran runs the command, and reports when the server had run it (as
	// seen by polling it directly) and when the reply came.
	ran := func(key string) (executed, replied time.Duration) {
		t.Helper()
		start := time.Now()
		rawCommand(t, conn, "SET "+key+" 1")
		done := make(chan time.Duration, 1)
		go func() {
			defer close(done)
			for time.Since(start) < 2*time.Second {
				if n, err := direct.Exists(ctx, key).Result(); err == nil && n == 1 {
					done <- time.Since(start)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		if reply, err := rawReply(conn, reader, 2*time.Second); err != nil || reply != "+OK" {
			t.Fatalf("SET %s: %q, %v", key, reply, err)
		}
		replied = time.Since(start)
		executed, ok := <-done
		if !ok {
			t.Fatalf("SET %s never ran", key)
		}
		return executed, replied
	}

	proxy.SetRequestLatency(latency)
	executed, replied := ran("one-way")
	t.Logf("request latency %v: ran after %v, replied after %v", latency, executed, replied)
	if executed < latency || replied < latency || replied > latency+80*time.Millisecond {
		t.Fatalf("request latency %v: the command ran after %v, its reply came after %v", latency, executed, replied)
	}
	proxy.SetRequestLatency(0)
	proxy.SetLatency(latency)
	executed, replied = ran("reply-way")
	t.Logf("reply latency %v: ran after %v, replied after %v", latency, executed, replied)
	if executed >= latency || replied < latency {
		t.Fatalf("reply latency %v: the command ran after %v, its reply came after %v", latency, executed, replied)
	}
	proxy.SetLatency(0)
	if executed, replied = ran("no-way"); replied >= latency {
		t.Fatalf("no latency: the command ran after %v, its reply came after %v", executed, replied)
	}
}

// echoServer accepts connections on 127.0.0.1 and sends back what it
// reads; it counts the bytes it received. Its goroutines end at cleanup.
type echoServer struct {
	listener net.Listener
	received atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{listener: listener}
	e.wg.Go(func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, conn)
			e.mu.Unlock()
			e.wg.Go(func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					n, err := conn.Read(buf)
					e.received.Add(int64(n))
					if n > 0 {
						if _, werr := conn.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = listener.Close()
		e.mu.Lock()
		for _, conn := range e.conns {
			_ = conn.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

// pattern is n bytes whose every 4-byte word is its own index, so that a
// byte out of place shows.
func pattern(n int) []byte {
	data := make([]byte, n)
	for i := 0; i+4 <= n; i += 4 {
		binary.BigEndian.PutUint32(data[i:], uint32(i/4))
	}
	return data
}

// streamThrough writes data through conn from a goroutine of its own (the
// write blocks while a hold lasts) and reads back the echo, while toggle
// runs; it returns what came back.
func streamThrough(t *testing.T, conn net.Conn, data []byte, toggle func()) []byte {
	t.Helper()
	wrote := make(chan error, 1)
	go func() {
		// Small writes: many chunks, each can meet a different fault.
		var err error
		for off := 0; off < len(data) && err == nil; off += 1000 {
			_, err = conn.Write(data[off:min(off+1000, len(data))])
		}
		wrote <- err
	}()
	toggle()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil {
		_ = conn.Close() // unblocks the writer
		<-wrote
		t.Fatalf("read the echo: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	return got
}

// Holds on a stream larger than the proxy's queues: nothing crosses a held
// direction (the sender is held back, as by a stalled link), the other
// direction flows, and when the hold is lifted every byte arrives, in
// order.
func TestProxy_holdsOnAStreamKeepEveryByteInOrder(t *testing.T) {
	echo := newEchoServer(t)
	proxy := newProxy(t, echo.listener.Addr().String())
	data := pattern(4 << 20)

	t.Run("requests", func(t *testing.T) {
		conn := dial(t, proxy.Addr())
		before := echo.received.Load()
		proxy.HoldRequests(true)
		got := streamThrough(t, conn, data, func() {
			time.Sleep(200 * time.Millisecond)
			if n := echo.received.Load() - before; n != 0 {
				t.Errorf("the server received %d bytes with the requests held", n)
			}
			proxy.HoldRequests(false)
		})
		if !bytes.Equal(got, data) {
			t.Fatal("the echo of a stream held on its way out differs from the stream")
		}
	})
	t.Run("replies", func(t *testing.T) {
		conn := dial(t, proxy.Addr())
		before := echo.received.Load()
		proxy.HoldReplies(true)
		got := streamThrough(t, conn, data, func() {
			// The requests flow while the replies are held: the server
			// gets bytes, until the held echo fills the queues and
			// buffers and holds the server back in turn.
			waitFor(t, func() bool { return echo.received.Load()-before >= 256<<10 })
			if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if n, err := conn.Read(make([]byte, 1)); !isTimeout(err) {
				t.Errorf("read with the replies held: %d bytes, %v; want a timeout", n, err)
			}
			proxy.HoldReplies(false)
		})
		if !bytes.Equal(got, data) {
			t.Fatal("the echo of a stream whose replies were held differs from the stream")
		}
	})
}

// Every one-way fault switched on and off at random while a stream flows,
// together with request and reply latency: the stream still arrives whole
// and in order.
func TestProxy_oneWayFaultsToggledUnderTrafficKeepOrder(t *testing.T) {
	echo := newEchoServer(t)
	proxy := newProxy(t, echo.listener.Addr().String())
	conn := dial(t, proxy.Addr())
	data := pattern(2 << 20)
	got := streamThrough(t, conn, data, func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 60 {
			proxy.HoldRequests(rng.IntN(2) == 0)
			proxy.HoldReplies(rng.IntN(2) == 0)
			proxy.SetRequestLatency(time.Duration(rng.IntN(3)) * time.Millisecond)
			proxy.SetLatency(time.Duration(rng.IntN(3)) * time.Millisecond)
			time.Sleep(5 * time.Millisecond)
		}
		proxy.HoldRequests(false)
		proxy.HoldReplies(false)
		proxy.SetRequestLatency(0)
		proxy.SetLatency(0)
	})
	if !bytes.Equal(got, data) {
		for i := range got {
			if got[i] != data[i] {
				t.Fatalf("the echo differs from the stream from byte %d on", i)
			}
		}
	}
}

// Lifting a hold does not end a Cut, nor Heal a hold.
func TestProxy_holdsAndCutAreIndependent(t *testing.T) {
	proxy, client, _, _ := setup(t)
	mustPing(t, client)
	proxy.Cut()
	proxy.HoldRequests(true)
	proxy.Heal()
	if _, err := ping(client); !isTimeout(err) {
		t.Fatalf("PING after Heal with requests still held: %v, want a timeout", err)
	}
	proxy.Cut()
	proxy.HoldRequests(false)
	if _, err := ping(newRedis(t, proxy.Addr())); !isTimeout(err) {
		t.Fatalf("PING after lifting a hold during a Cut: %v, want a timeout", err)
	}
	proxy.Heal()
	mustPing(t, newRedis(t, proxy.Addr()))
}
