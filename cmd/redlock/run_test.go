package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// TestRun_exitStatus: redlock run is transparent to scripts: CMD's status
// (or 128+signal) comes back, CMD sees the lock in its environment, and
// the lock is free again afterwards. One dead node of three changes
// nothing.
func TestRun_exitStatus(t *testing.T) {
	t.Parallel()
	urls := redlocktest.Start(t, 3).URLs()
	env := nodesEnvFor(append(urls[:2:2], closedPort(t)))
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"sh", "-c", "exit 7"}, 7, nil},
		{[]string{"true"}, 0, nil},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM), nil},
		{[]string{"sh", "-c", `test "$REDLOCK_NAME" = codes && test -n "$REDLOCK_OWNER" && test -z "$REDLOCK_TOKEN"`}, 0, nil},
		{[]string{"redlock-no-such-command"}, exitNotFound, []string{"redlock run: redlock-no-such-command: command not found"}},
		{[]string{"/nonexistent"}, exitNotFound, []string{"redlock run: /nonexistent: command not found"}},
	} {
		runCLI(t, env, append([]string{"run", "-name", "codes", "--"}, c.args...)...).expect(t, c.code, c.want...)
	}
	fenced := runCLI(t, env, "run", "-name", "codes", "-fencing", "--", "sh", "-c", `echo "$REDLOCK_TOKEN"`)
	fenced.expect(t, 0)
	if token, err := strconv.Atoi(strings.TrimSpace(fenced.stdout.String())); err != nil || token < 1 {
		t.Errorf("REDLOCK_TOKEN = %q, want a positive number", fenced.stdout.String())
	}
	inspect := runCLI(t, env, "inspect", "-json", "codes")
	inspect.expect(t, exitError, "node 2") // the dead node; the report still comes
	var rep lockReport
	if err := json.Unmarshal(inspect.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("inspect -json: %v: %s", err, inspect.stdout.String())
	}
	if rep.Holder != "" || rep.Reachable != 2 {
		t.Errorf("after the runs: holder %q on %d nodes, %d reachable; want free, 2 reachable", rep.Holder, rep.HeldOn, rep.Reachable)
	}
}

// TestRun_noOverlap: commands run under one name never overlap, judged by
// the intervals the commands themselves write down.
func TestRun_noOverlap(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	log := filepath.Join(t.TempDir(), "intervals")
	script := `echo "$0 start $(date +%s%N)" >> "$1"; sleep 0.2; echo "$0 end $(date +%s%N)" >> "$1"`
	const runs = 4
	var clis []*cli
	for i := range runs {
		clis = append(clis, startCLI(t, env, "run", "-name", "overlap", "--", "sh", "-c", script, "run"+strconv.Itoa(i), log))
	}
	waitAll(t, clis)
	intervals := readIntervals(t, log)
	if len(intervals) != runs {
		t.Fatalf("%d commands wrote intervals, want %d", len(intervals), runs)
	}
	if most := mostAtOnce(intervals); most != 1 {
		t.Errorf("%d CMDs ran at once under one lock: %v", most, intervals)
	}
}

// interval is when one CMD of a run test started and ended (ns).
type interval struct{ start, end int64 }

func (i *interval) String() string { return fmt.Sprintf("[%d, %d]", i.start, i.end) }

// readIntervals reads the "ID start|end UNIXNANOS" lines the run tests'
// commands append to log.
func readIntervals(t *testing.T, log string) map[string]*interval {
	t.Helper()
	intervals := map[string]*interval{}
	file, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		var id, what string
		var at int64
		if _, err := fmt.Sscan(scanner.Text(), &id, &what, &at); err != nil {
			t.Fatalf("line %q: %v", scanner.Text(), err)
		}
		if intervals[id] == nil {
			intervals[id] = &interval{}
		}
		if what == "start" {
			intervals[id].start = at
		} else {
			intervals[id].end = at
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return intervals
}

// mostAtOnce is the most intervals that overlap at one moment.
func mostAtOnce(intervals map[string]*interval) int {
	most := 0
	for _, x := range intervals {
		at := 0 // intervals running when x started, x included
		for _, y := range intervals {
			if y.start <= x.start && x.start < y.end {
				at++
			}
		}
		most = max(most, at)
	}
	return most
}

// waitAll waits for every CLI and expects each to exit 0.
func waitAll(t *testing.T, clis []*cli) {
	t.Helper()
	for _, c := range clis {
		c.wait()
		c.expect(t, 0)
	}
}

// TestRun_permits: with -permits 2, two CMDs run at once and never three;
// another count for the name is refused before anything runs.
func TestRun_permits(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	log := filepath.Join(t.TempDir(), "intervals")
	script := `echo "$0 start $(date +%s%N)" >> "$1"; sleep 0.3; echo "$0 end $(date +%s%N)" >> "$1"`
	const runs = 5
	var clis []*cli
	for i := range runs {
		clis = append(clis, startCLI(t, env, "run", "-name", "pool", "-permits", "2", "--", "sh", "-c", script, "run"+strconv.Itoa(i), log))
	}
	waitAll(t, clis)
	intervals := readIntervals(t, log)
	if len(intervals) != runs {
		t.Fatalf("%d commands wrote intervals, want %d", len(intervals), runs)
	}
	if most := mostAtOnce(intervals); most != 2 {
		t.Errorf("at most %d CMDs at once, want 2 (the permits, reached): %v", most, intervals)
	}
	other := startCLI(t, env, "run", "-name", "pool", "-permits", "3", "--", "true")
	other.wait()
	other.expect(t, exitUsage)
	if !strings.Contains(other.stderr.String(), "has 2 permits") {
		t.Errorf("stderr %q does not say the stored count", other.stderr.String())
	}
	fair := startCLI(t, env, "run", "-name", "pool", "-permits", "2", "-fair", "--", "true")
	fair.wait()
	fair.expect(t, exitUsage)
}

// TestRun_notAcquired: -wait bounds the wait, and a timeout has its own
// status; the holder is stopped by a forwarded SIGTERM.
func TestRun_notAcquired(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	ready := filepath.Join(t.TempDir(), "ready")
	holder := startCLI(t, env, "run", "-name", "busy", "--", "sh", "-c", `echo up > "$0"; exec sleep 20`, ready)
	waitForFile(t, ready, 10*time.Second)

	began := time.Now()
	runCLI(t, env, "run", "-name", "busy", "-wait", "1s", "--", "true").
		expect(t, exitNotAcquired, `redlock run: lock "busy" not acquired within 1s`, "held by another owner")
	if took := time.Since(began); took > 6*time.Second {
		t.Errorf("-wait 1s took %v", took)
	}

	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	holder.wait()
	holder.expect(t, 128+int(syscall.SIGTERM)) // forwarded: sleep died of it
	runCLI(t, env, "run", "-name", "busy", "-wait", "2s", "--", "true").expect(t, 0)
}

// TestRun_notAnsweredInTime: a -wait that ends before any attempt
// finished says so; it does not claim that another owner holds the lock.
func TestRun_notAnsweredInTime(t *testing.T) {
	cfg := runConfig{command: "run", name: "unanswered", wait: 20 * time.Millisecond}
	var stderr bytes.Buffer
	// What Lock returns when its ctx ends before a round was decided.
	err := fmt.Errorf("%w: %w", redlock.ErrNotAcquired, context.DeadlineExceeded)
	if code := notAcquired(cfg, err, true, &stderr); code != exitNotAcquired {
		t.Fatalf("exit %d, want %d", code, exitNotAcquired)
	}
	if got := stderr.String(); strings.Contains(got, "another owner") || !strings.Contains(got, "deadline exceeded") {
		t.Fatalf("no attempt finished, and run said %q", got)
	}
}

// TestRun_lost: when a majority of the nodes dies under a held lock, the
// lease is lost within its TTL; CMD gets SIGTERM (or SIGKILL after -grace
// when it ignores SIGTERM) and redlock exits with the lost status.
func TestRun_lost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, trap string
		wantTerm   bool
	}{
		{"stops on SIGTERM", `trap 'echo TERM > "$1"; exit 0' TERM`, true},
		{"ignores SIGTERM", `trap '' TERM`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cluster := redlocktest.Start(t, 3)
			dir := t.TempDir()
			ready, term := filepath.Join(dir, "ready"), filepath.Join(dir, "term")
			script := c.trap + `; echo up > "$0"; while :; do sleep 0.05; done`
			held := startCLI(t, nodesEnvFor(cluster.URLs()), "run", "-name", "doomed", "-ttl", "1s", "-grace", "300ms",
				"--", "sh", "-c", script, ready, term)
			waitForFile(t, ready, 10*time.Second)
			for _, node := range cluster.Servers[1:] {
				if err := node.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			killed := time.Now()
			held.wait()
			held.expect(t, exitLost, `redlock run: lock "doomed" lost while sh ran`, "sent it SIGTERM")
			if took := time.Since(killed); took > 5*time.Second {
				t.Errorf("lost status %v after the nodes died, want within about the TTL", took)
			}
			_, err := os.Stat(term)
			if gotTerm := err == nil; gotTerm != c.wantTerm {
				t.Errorf("CMD's TERM trap ran: %v, want %v", gotTerm, c.wantTerm)
			}
			if lines := strings.Count(strings.TrimSpace(held.stderr.String()), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1: %s", lines, held.stderr.String())
			}
		})
	}
}

// TestRun_killedRedlockKillsCMD: kill -9 of redlock run leaves no CMD
// running unsupervised (Linux): CMD dies with it.
func TestRun_killedRedlockKillsCMD(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CMD dies with redlock on Linux only")
	}
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := startCLI(t, env, "run", "-name", "orphan", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 30`, pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, pidFile, 10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("CMD (pid %d) still runs 5 s after redlock was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRun_wrongTypeKey: a key of the lock that holds something else (the
// lock key a string; with -fencing, the fence key a hash) ends run at
// once with 125 and a message naming the key, not after -wait with 124.
func TestRun_wrongTypeKey(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	ctx := context.Background()
	for i := range cluster.Servers {
		admin := cluster.Admin(t, i)
		if err := admin.Set(ctx, "redlock:{typed}", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, "redlock:{fenced}:fence", "x", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"-name", "typed"}, "redlock:{typed}"},
		{[]string{"-name", "fenced", "-fencing"}, "redlock:{fenced}:fence"},
	} {
		start := time.Now()
		args := append(append([]string{"run", "-wait", "20s"}, c.args...), "--", "true")
		run := runCLI(t, env, args...)
		run.expect(t, exitError, c.key, "WRONGTYPE")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%v: took %v; want an answer at once", c.args, took)
		}
	}
}

// TestRun_pausedNodeDelaysNeitherStartNorExit: with one node of three
// paused, redlock run starts CMD as soon as a quorum answers, and exits
// as soon as CMD has and a quorum released the lock, not after the paused
// node's timeout (500ms) for the calls still out to it.
func TestRun_pausedNodeDelaysNeitherStartNorExit(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	dir := t.TempDir()
	// The same run with every node live first: the CLI's own start on a
	// loaded machine is the baseline a paused node must not add to. The
	// fastest of three runs each: a delay the paused node causes is in
	// every one of them, a loaded machine's stall only in some.
	baseline, _ := fastestRun(t, env, filepath.Join(dir, "live"))
	if err := cluster.Servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Servers[2].Resume() })
	took, delay := fastestRun(t, env, filepath.Join(dir, "paused"))
	t.Logf("CMD started %v after redlock run (%v with every node live); redlock run exited %v after CMD", took, baseline, delay)
	if took > baseline+400*time.Millisecond {
		t.Errorf("CMD started %v after redlock run, %v with every node live; want well under the node timeout (500ms) more", took, baseline)
	}
	if delay > 300*time.Millisecond {
		t.Errorf("redlock run exited %v after CMD; want well under the node timeout (500ms)", delay)
	}
}

// fastestRun runs timedRun three times and returns the shortest start
// and the shortest exit of the three.
func fastestRun(t *testing.T, env []string, dir string) (started, exited time.Duration) {
	t.Helper()
	for i := range 3 {
		s, e := timedRun(t, env, fmt.Sprintf("%s-%d", dir, i))
		if i == 0 || s < started {
			started = s
		}
		if i == 0 || e < exited {
			exited = e
		}
	}
	return started, exited
}

// timedRun runs a 0.1 s CMD under redlock run and returns how long CMD
// took to start and how long redlock run took to exit after CMD ended.
func timedRun(t *testing.T, env []string, dir string) (started, exited time.Duration) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	startedFile, endedFile := filepath.Join(dir, "started"), filepath.Join(dir, "ended")
	start := time.Now()
	c := startCLI(t, env, "run", "-name", "paused", "--", "sh", "-c", `touch "$0"; sleep 0.1; touch "$1"`, startedFile, endedFile)
	for !fileExists(startedFile) {
		if time.Since(start) > 10*time.Second {
			_ = c.cmd.Process.Kill()
			c.wait()
			t.Fatalf("CMD did not start within 10 s; stderr: %s", c.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	started = time.Since(start)
	c.wait()
	end := time.Now()
	c.expect(t, 0)
	info, err := os.Stat(endedFile)
	if err != nil {
		t.Fatalf("CMD did not finish: %v; stderr: %s", err, c.stderr.String())
	}
	return started, end.Sub(info.ModTime())
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
