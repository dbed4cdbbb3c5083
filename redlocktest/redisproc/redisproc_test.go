package redisproc_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// requireRedis skips when redis-server is missing (fails with REDLOCK_REQUIRE_REDIS=1).
// It is duplicated here because redlocktest imports this package.
func requireRedis(t *testing.T) string {
	t.Helper()
	path, err := redisproc.LookPath("")
	if err != nil {
		if os.Getenv("REDLOCK_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return path
}

func startServer(t *testing.T, cfg redisproc.Config) *redisproc.Server {
	t.Helper()
	requireRedis(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	server, err := redisproc.Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Kill(); err != nil {
			t.Errorf("Kill: %v", err)
		}
	})
	return server
}

// command sends one inline command and returns the first reply line.
func command(t *testing.T, addr, line string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(line + "\r\n")); err != nil {
		return "", err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(reply), err
}

func TestLookPathHint(t *testing.T) {
	_, err := redisproc.LookPath("redis-server-that-does-not-exist")
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
		t.Fatalf("want install hint, got %v", err)
	}
}

// TestServerEnv: REDLOCK_SERVER picks the binary of an empty
// Config.Binary, and the install hint names that binary's package.
func TestServerEnv(t *testing.T) {
	for binary, hint := range map[string]string{
		"valkey-server-that-does-not-exist": "-t bookworm-backports valkey-server",
		"redis-server-that-does-not-exist":  "apt-get install -y redis-server",
	} {
		t.Setenv(redisproc.ServerEnv, binary)
		_, err := redisproc.LookPath("")
		if err == nil || !strings.Contains(err.Error(), binary+" not found") || !strings.Contains(err.Error(), hint) {
			t.Errorf("%s=%s: want %q and its hint %q, got %v", redisproc.ServerEnv, binary, binary, hint, err)
		}
	}
}

func TestStartRequiresDir(t *testing.T) {
	if _, err := redisproc.Start(redisproc.Config{}); err == nil {
		t.Fatal("Start without Dir succeeded")
	}
}

func TestStartFailureQuotesLog(t *testing.T) {
	requireRedis(t)
	_, err := redisproc.Start(redisproc.Config{Dir: t.TempDir(), Args: []string{"--no-such-directive", "1"}})
	if err == nil {
		t.Fatal("Start with a bad directive succeeded")
	}
	message := err.Error()
	if !strings.HasPrefix(message, "redisproc:") || !strings.Contains(message, "no-such-directive") {
		t.Fatalf("error lacks prefix or log tail: %v", err)
	}
	t.Logf("start error: %v", err)
}

func TestLifecycle(t *testing.T) {
	server := startServer(t, redisproc.Config{})
	if server.Addr() != net.JoinHostPort("127.0.0.1", strconv.Itoa(server.Port())) || server.URL() != "redis://"+server.Addr() {
		t.Fatalf("Addr/URL mismatch: %s %s", server.Addr(), server.URL())
	}
	if reply, err := command(t, server.Addr(), "PING"); err != nil || reply != "+PONG" {
		t.Fatalf("PING: %q %v", reply, err)
	}

	if err := server.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if !server.Paused() || !server.Running() {
		t.Fatal("paused server must report Paused and Running")
	}
	if _, err := command(t, server.Addr(), "PING"); err == nil {
		t.Fatal("paused server answered")
	}
	if err := server.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if reply, err := command(t, server.Addr(), "PING"); err != nil || reply != "+PONG" {
		t.Fatalf("PING after Resume: %q %v", reply, err)
	}

	// Stop must work on a paused server and be idempotent.
	if err := server.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := server.Stop(); err != nil {
		t.Fatalf("Stop paused server: %v", err)
	}
	if server.Running() {
		t.Fatal("Running after Stop")
	}
	if err := server.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := server.Kill(); err != nil {
		t.Fatalf("Kill after Stop: %v", err)
	}
	if err := server.Pause(); !errors.Is(err, redisproc.ErrNotRunning) {
		t.Fatalf("Pause stopped server: want ErrNotRunning, got %v", err)
	}
	if err := server.Resume(); !errors.Is(err, redisproc.ErrNotRunning) {
		t.Fatalf("Resume stopped server: want ErrNotRunning, got %v", err)
	}

	port := server.Port()
	if err := server.Restart(true); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if server.Port() != port {
		t.Fatalf("port changed across Restart: %d -> %d", port, server.Port())
	}
	if err := server.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := server.Kill(); err != nil {
		t.Fatalf("Kill paused server: %v", err)
	}
	if server.Running() {
		t.Fatal("Running after Kill")
	}
}

func TestFixedPortTaken(t *testing.T) {
	first := startServer(t, redisproc.Config{})
	_, err := redisproc.Start(redisproc.Config{Dir: t.TempDir(), Port: first.Port()})
	if err == nil {
		t.Fatal("second server on a taken port started")
	}
	t.Logf("start error: %v", err)
	if reply, pingErr := command(t, first.Addr(), "PING"); pingErr != nil || reply != "+PONG" {
		t.Fatalf("first server disturbed: %q %v", reply, pingErr)
	}
}

func TestRestartAppendOnly(t *testing.T) {
	server := startServer(t, redisproc.Config{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	if reply, err := command(t, server.Addr(), "SET key value"); err != nil || reply != "+OK" {
		t.Fatalf("SET: %q %v", reply, err)
	}
	if err := server.Restart(true); err != nil {
		t.Fatalf("Restart(true): %v", err)
	}
	if reply, err := command(t, server.Addr(), "EXISTS key"); err != nil || reply != ":1" {
		t.Fatalf("key lost across Restart(true) with AOF: %q %v", reply, err)
	}
	if err := server.Restart(false); err != nil {
		t.Fatalf("Restart(false): %v", err)
	}
	if reply, err := command(t, server.Addr(), "EXISTS key"); err != nil || reply != ":0" {
		t.Fatalf("key survived Restart(false): %q %v", reply, err)
	}
}

func TestBinaryAndEnv(t *testing.T) {
	binary := requireRedis(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	wrapper := filepath.Join(dir, "wrapper.sh")
	script := "#!/bin/sh\nprintf '%s' \"$REDISPROC_MARKER\" > \"" + marker + "\"\nexec \"" + binary + "\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	server := startServer(t, redisproc.Config{Dir: filepath.Join(dir, "data"), Binary: wrapper, Env: []string{"REDISPROC_MARKER=hello"}})
	if data, err := os.ReadFile(marker); err != nil || string(data) != "hello" {
		t.Fatalf("Env not passed to Binary: %q %v", data, err)
	}
	if err := server.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestUndeclared: Start declares a new server new (it has the marker),
// unless asked to leave it as a user's brand-new redis-server is.
func TestUndeclared(t *testing.T) {
	for _, undeclared := range []bool{false, true} {
		server := startServer(t, redisproc.Config{Undeclared: undeclared})
		want := ":1"
		if undeclared {
			want = ":0"
		}
		if reply, err := command(t, server.Addr(), "EXISTS redlock:node"); err != nil || reply != want {
			t.Errorf("Undeclared %v: EXISTS redlock:node = %q, %v; want %s", undeclared, reply, err, want)
		}
	}
}
