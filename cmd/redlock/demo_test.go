package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/redlocktest"
)

// TestDemo: the demo upholds its claims with its own nodes (killing and
// restarting a minority) and with given nodes (which it leaves alone), and
// shows handoff times for the plain and the fair lock. Its own nodes are
// brand new and declared as redlock init does, so locking starts at once
// rather than a restart guard (the TTL, 2 s) later.
func TestDemo(t *testing.T) {
	t.Parallel()
	redlocktest.RequireRedis(t)
	for _, c := range []struct {
		name  string
		nodes func(t *testing.T) string
		want  string
	}{
		{"own nodes", func(*testing.T) string { return "3" }, "declared new (redlock init)"},
		{"given nodes", func(t *testing.T) string { return strings.Join(redlocktest.Start(t, 3).URLs(), ",") }, "node failure: skipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := runCLI(t, nil, "demo", "-nodes", c.nodes(t), "-duration", "2s", "-workers", "4")
			run.expect(t, exitOK)
			out := run.stdout.String()
			for _, want := range []string{c.want, "node failure: ", "plain ", "fair ", "handoff p50", "handoff fair", "\nviolations: 0\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if !strings.HasSuffix(out, "\nviolations: 0\n") {
				t.Errorf("last line is not \"violations: 0\":\n%s", out)
			}
			if first := firstProgress.FindStringSubmatch(out); first == nil || first[1] == "0" {
				t.Errorf("no plain section in the first second:\n%s", out)
			}
		})
	}
}

// firstProgress matches the demo's first progress line and its count of
// plain sections.
var firstProgress = regexp.MustCompile(`\[  1s\] [a-z ]+ plain +(\d+) `)
