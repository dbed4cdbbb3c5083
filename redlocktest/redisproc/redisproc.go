// Package redisproc starts and controls real redis-server processes.
//
// It exists for integration tests and demo programs that need genuine Redis
// nodes they can kill, pause, resume and restart. It has no dependency on the
// testing package. It relies on Unix signals (SIGKILL, SIGSTOP, SIGCONT) and is
// therefore only supported on Unix-like systems; Linux is the primary target.
//
// Every exported method of Server is safe for concurrent use.
package redisproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/quorumlock/redlock/node"
	"github.com/redis/go-redis/v9"
)

// DefaultBinary is the executable name used when Config.Binary is empty
// and ServerEnv is not set.
const DefaultBinary = "redis-server"

// ServerEnv names the environment variable that picks the server binary
// when Config.Binary is empty (e.g. REDLOCK_SERVER=valkey-server): the
// same suites then run on another server without changing a test.
const ServerEnv = "REDLOCK_SERVER"

// Config describes one redis-server process.
type Config struct {
	// Dir is the working directory of the server: dump and AOF files, the
	// Redis log (redis.log) and the captured stdout/stderr (redis.stdout) live
	// here. Required. It is created if missing.
	Dir string
	// Port is the TCP port on 127.0.0.1. Zero picks a free loopback port.
	Port int
	// Args are extra redis-server arguments, e.g.
	// {"--appendonly", "yes", "--appendfsync", "always"}. They are passed after
	// the defaults, so they override them.
	Args []string
	// Binary is the redis-server executable. Empty means $REDLOCK_SERVER,
	// or DefaultBinary when that is unset, looked up in PATH.
	Binary string
	// Env holds extra "KEY=value" environment variables appended to the
	// current environment (e.g. LD_PRELOAD and FAKETIME for libfaketime).
	Env []string
	// Undeclared leaves the new server as a user's brand-new redis-server
	// is: not declared new (see markNew), so that its first votes wait
	// for the restart guard unless the caller declares it, as `redlock
	// init` does.
	Undeclared bool
}

// Server is a running (or stopped) redis-server process started by Start.
// Its port never changes, even across Restart.
type Server struct {
	cfg    Config // normalized: absolute Dir, resolved Binary
	port   int
	mu     sync.Mutex
	proc   *process // nil when not running
	paused bool
}

// LookPath resolves a server binary (when binary is empty: $REDLOCK_SERVER,
// else DefaultBinary). When it cannot be found, the error carries an
// installation hint naming the package.
func LookPath(binary string) (string, error) {
	if binary == "" {
		binary = cmp.Or(os.Getenv(ServerEnv), DefaultBinary)
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("redisproc: %s not found in PATH: install it with `%s`: %w", binary, installHint(binary), err)
	}
	return path, nil
}

// installHint is the command that installs binary on Debian 12, whose
// Valkey is in bookworm-backports only.
func installHint(binary string) string {
	if strings.Contains(filepath.Base(binary), "valkey") {
		return "apt-get install -y -t bookworm-backports valkey-server"
	}
	return "apt-get install -y redis-server"
}

// Start launches a redis-server described by cfg and waits (up to about five
// seconds) until it answers PING. On failure no process is left running and
// the error includes the tail of the server's log.
//
// When cfg.Port is zero a free port is chosen; if another process grabs it
// before redis-server binds, Start retries with a new port a few times.
func Start(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("redisproc: Config.Dir is required")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("redisproc: invalid port %d", cfg.Port)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("redisproc: resolve dir %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redisproc: create dir: %w", err)
	}
	binary, err := LookPath(cfg.Binary)
	if err != nil {
		return nil, err
	}
	normalized := cfg
	normalized.Dir = dir
	normalized.Binary = binary
	normalized.Args = append([]string(nil), cfg.Args...)
	normalized.Env = append([]string(nil), cfg.Env...)

	const attempts = 5
	for attempt := 1; ; attempt++ {
		port := cfg.Port
		if port == 0 {
			port, err = freePort()
			if err != nil {
				return nil, err
			}
		}
		server := &Server{cfg: normalized, port: port}
		proc, err := server.launch()
		if err == nil {
			server.proc = proc
			if !cfg.Undeclared {
				server.markNew()
			}
			return server, nil
		}
		if cfg.Port != 0 || !errors.Is(err, errAddressInUse) || attempt == attempts {
			return nil, err
		}
	}
}

// markNew declares the new server as an operator of a brand-new node
// would (node.Declare, what `redlock init` runs): it never held a lock, so
// it votes at once. A Restart does not declare it again: a restart is what
// the restart guard is for. Not on a TLS-only or password-protected
// server: tests of those declare it themselves.
func (s *Server) markNew() {
	client := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: readyTimeout})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	_ = node.Declare(ctx, client, "redlock:")
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL returns "redis://127.0.0.1:PORT".
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Port returns the TCP port; it is stable across Restart.
func (s *Server) Port() int { return s.port }

// Dir returns the absolute working directory of the server.
func (s *Server) Dir() string { return s.cfg.Dir }

// Running reports whether the process is alive (a paused process counts as
// running). It becomes false after Kill, Stop, or if the process exits on its
// own.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// Paused reports whether Pause was called without a later Resume, Kill, Stop
// or Restart.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && s.proc != nil && !s.proc.exited()
}
