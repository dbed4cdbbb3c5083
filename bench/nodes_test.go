package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/redis/go-redis/v9"
)

// A local copy of what redlocktest/redisproc does for the root module, for the
// plain nodes every benchmark here runs on (BenchmarkCluster takes its
// Redis Clusters from redlocktest).

const (
	readyTimeout = 5 * time.Second
	portAttempts = 3 // a free port can be taken between probing and binding
)

// server is one redis-server process.
type server struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
}

// nodes is a set of independent redis-server processes, with one admin
// client each (for INFO, never used by a library under test).
type nodes struct {
	servers  []*server
	admins   []*redis.Client
	stopOnce sync.Once
}

// startNodes starts n redis-server processes on free loopback ports and
// stops them (SIGKILL, then Wait) when b ends. It skips b when redis-server
// is not installed, unless REDLOCK_REQUIRE_REDIS=1 (as in the root module).
func startNodes(b *testing.B, n int) *nodes {
	b.Helper()
	binary, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH: install it (apt-get install -y redis-server, brew install redis)"
		if os.Getenv("REDLOCK_REQUIRE_REDIS") == "1" {
			b.Fatal(msg)
		}
		b.Skip(msg)
	}
	set := &nodes{}
	b.Cleanup(set.stop)
	for i := range n {
		srv, err := startServer(binary, b.TempDir())
		if err != nil {
			b.Fatalf("node %d: %v", i, err)
		}
		set.servers = append(set.servers, srv)
		admin := redis.NewClient(&redis.Options{Addr: srv.addr})
		set.admins = append(set.admins, admin)
		// A new node never held a lock: declared so (as `redlock init`
		// does), or redlock's restart guard keeps it from voting for a TTL.
		if err := node.Declare(context.Background(), admin, "redlock:"); err != nil {
			b.Fatalf("node %d: mark it new: %v", i, err)
		}
	}
	return set
}

// stop closes the admin clients and kills every server, waiting for each.
// It is safe to call more than once (a benchmark may stop a set early).
func (s *nodes) stop() {
	s.stopOnce.Do(func() {
		for _, admin := range s.admins {
			_ = admin.Close()
		}
		for _, srv := range s.servers {
			srv.kill()
		}
	})
}

// addrs lists the nodes' host:port addresses.
func (s *nodes) addrs() []string {
	out := make([]string, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.addr
	}
	return out
}

func startServer(binary, dir string) (*server, error) {
	var errs []error
	for range portAttempts {
		srv, err := tryStart(binary, dir)
		if err == nil {
			return srv, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func tryStart(binary, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis-"+strconv.Itoa(port)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(binary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	srv := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{})}
	go func() { // waited for by kill, through done
		_ = cmd.Wait()
		close(srv.done)
	}()
	if err := srv.waitReady(); err != nil {
		srv.kill()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%w\n--- %s ---\n%s", err, logPath, log)
	}
	return srv, nil
}

// waitReady polls PING until the server answers or gives up.
func (s *server) waitReady() error {
	client := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s not ready after %v: %w", s.addr, readyTimeout, err)
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server at %s exited during startup", s.addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits until the process is reaped.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// freePort asks the kernel for a loopback port that is free right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if err := l.Close(); err != nil || !ok {
		return 0, fmt.Errorf("find a free port: %v (%v)", l.Addr(), err)
	}
	return addr.Port, nil
}
