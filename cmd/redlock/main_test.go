package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the redlock command built once by TestMain: the tests exec it
// as a script would, so exit statuses, signals and stderr are the real ones.
var binary string

// raceEnabled is set by race_test.go under -race.
var raceEnabled bool

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redlock-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "redlock test: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "redlock test: go build: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "redlock test: goroutines left behind:", err)
		return 1
	}
	return code
}

// cliTimeout bounds every exec of the binary: a hung command fails its
// test instead of the whole package's timeout.
const cliTimeout = 30 * time.Second

// cli is one exec of the binary. Its output is read only after wait.
type cli struct {
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr bytes.Buffer
	once           sync.Once
	code           int
}

// startCLI starts the binary with env added to the test's environment. A
// cleanup kills it if the test did not wait for it.
func startCLI(t *testing.T, env []string, args ...string) *cli {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	c := &cli{cmd: exec.CommandContext(ctx, binary, args...), cancel: cancel}
	c.cmd.Env = append(os.Environ(), env...)
	if _, set := os.LookupEnv("GORACE"); !set {
		// A -race binary sleeps 1 s at exit by default (to let other
		// goroutines report); the tests time the exit.
		c.cmd.Env = append(c.cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes open
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %v: %v", args, err)
	}
	t.Cleanup(func() {
		c.cancel()
		c.wait()
	})
	return c
}

// wait waits for the exit and returns its status (-1 for a signal).
func (c *cli) wait() int {
	c.once.Do(func() {
		err := c.cmd.Wait()
		c.cancel()
		c.code = c.cmd.ProcessState.ExitCode()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			c.code = -2
			fmt.Fprintf(&c.stderr, "[test: wait: %v]", err)
		}
	})
	return c.code
}

// runCLI runs the binary to completion.
func runCLI(t *testing.T, env []string, args ...string) *cli {
	t.Helper()
	c := startCLI(t, env, args...)
	c.wait()
	return c
}

// expect checks the exit status, and that stderr contains each of want.
func (c *cli) expect(t *testing.T, code int, want ...string) {
	t.Helper()
	if c.code != code {
		t.Errorf("%v: exit %d, want %d; stderr: %s", c.cmd.Args[1:], c.code, code, c.stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(c.stderr.String(), w) {
			t.Errorf("%v: stderr does not contain %q: %s", c.cmd.Args[1:], w, c.stderr.String())
		}
	}
}

// nodesEnvFor is the environment naming the given nodes.
func nodesEnvFor(urls []string) []string {
	return []string{nodesEnv + "=" + strings.Join(urls, ",")}
}

// closedPort returns a loopback port nothing listens on (it was free a
// moment ago), for a node that refuses connections.
func closedPort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	_ = listener.Close()
	return "redis://" + addr
}

// waitForFile waits until path exists and is not empty, and returns it.
func waitForFile(t *testing.T, path string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, err := os.ReadFile(path)
		if err == nil && len(data) > 0 {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
