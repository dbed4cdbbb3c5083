package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest"
)

// TestElect_oneLeaderAtATime: three candidates lead in turn, never two at
// once, each with REDLOCK_VALUE and a REDLOCK_TERM greater than every
// earlier leader's; a leader whose leadership is forced away is stopped
// (exit 123).
func TestElect_oneLeaderAtATime(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	dir := t.TempDir()
	log := filepath.Join(dir, "intervals")
	terms := filepath.Join(dir, "terms")
	script := `echo "$0 start $(date +%s%N)" >> "$1"; echo "$REDLOCK_VALUE $REDLOCK_TERM" >> "$2"; sleep 0.2; echo "$0 end $(date +%s%N)" >> "$1"`
	const candidates = 3
	var clis []*cli
	for i := range candidates {
		id := "c" + strconv.Itoa(i)
		clis = append(clis, startCLI(t, env, "elect", "-name", "leader", "-value", id, "--", "sh", "-c", script, id, log, terms))
	}
	waitAll(t, clis)
	intervals := readIntervals(t, log)
	if len(intervals) != candidates {
		t.Fatalf("%d leaders, want %d", len(intervals), candidates)
	}
	if most := mostAtOnce(intervals); most != 1 {
		t.Errorf("%d leaders at once: %v", most, intervals)
	}
	data, err := os.ReadFile(terms)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var value string
		var term uint64
		if _, err := fmt.Sscan(line, &value, &term); err != nil || !strings.HasPrefix(value, "c") {
			t.Fatalf("line %q: %v", line, err)
		}
		if term <= last {
			t.Errorf("term %d after %d", term, last)
		}
		last = term
	}

	started := filepath.Join(dir, "started")
	leader := startCLI(t, env, "elect", "-name", "leader", "-ttl", "3s", "-grace", "1s", "--", "sh", "-c", `echo started > "$0"; exec sleep 30`, started)
	waitForFile(t, started, 10*time.Second)
	runCLI(t, env, "unlock", "-force", "leader").expect(t, exitOK)
	leader.wait()
	leader.expect(t, exitLost, "redlock elect: lock \"leader\" lost")
}
