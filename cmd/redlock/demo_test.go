package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/redlock/internal/redistest"
)

// TestDemo: the demo upholds its claims with its own nodes (killing and
// restarting a minority) and with given nodes (which it leaves alone), and
// shows handoff times for the plain and the fair lock.
func TestDemo(t *testing.T) {
	t.Parallel()
	redistest.RequireRedis(t)
	for _, c := range []struct {
		name  string
		nodes func(t *testing.T) string
		want  string
	}{
		{"own nodes", func(*testing.T) string { return "3" }, "node failure: killed 1 of 3 nodes"},
		{"given nodes", func(t *testing.T) string { return strings.Join(redistest.Start(t, 3).URLs(), ",") }, "node failure: skipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := runCLI(t, nil, "demo", "-nodes", c.nodes(t), "-duration", "2s", "-workers", "4")
			run.expect(t, exitOK)
			out := run.stdout.String()
			for _, want := range []string{c.want, "plain ", "fair ", "handoff p50", "handoff fair", "\nviolations: 0\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if !strings.HasSuffix(out, "\nviolations: 0\n") {
				t.Errorf("last line is not \"violations: 0\":\n%s", out)
			}
		})
	}
}
