package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestUsage: wrong flags and missing arguments exit 2 with a usage line,
// before any node is contacted (no redis-server needed).
func TestUsage(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor([]string{closedPort(t)})
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{env, nil, "usage: redlock <command>"},
		{env, []string{"lock"}, `redlock: unknown command "lock"`},
		{env, []string{"run", "-bogus", "-name", "x", "--", "true"}, "usage: redlock run"},
		{env, []string{"run", "-name", "x"}, "redlock run: no command"},
		{env, []string{"run", "--", "true"}, "redlock run: -name is required"},
		{env, []string{"run", "-name", "x", "-ttl", "-1s", "--", "true"}, "redlock run: -ttl must be positive"},
		{[]string{nodesEnv + "="}, []string{"run", "-name", "x", "--", "true"}, "redlock run: no nodes"},
		{env, []string{"run", "-nodes", "http://h:1", "-name", "x", "--", "true"}, `redlock run: node 0 "http://h:1": redis: invalid URL scheme`},
		{env, []string{"unlock", "-force", "-nodes", "redis://u:secret@h:x", "x"}, `redlock unlock: node 0 "redis://u:xxxxx@h:x": invalid port`},
		{env, []string{"init", "127.0.0.1:1", "-nodes", "127.0.0.1:2"}, "redlock init: give the nodes either as arguments or with -nodes"},
		{env, []string{"init", "h:1", "h:x"}, `redlock init: node 1 "redis://h:x": invalid port`},
		{[]string{nodesEnv + "="}, []string{"init"}, "redlock init: no nodes"},
		{env, []string{"demo", "-nodes", "abc"}, `redlock demo: -nodes wants a count or node URLs (redis://host:port or host:port), got "abc"`},
		{env, []string{"run", "-name", "x", "-permits", "-1", "--", "true"}, "redlock run: -permits must not be negative"},
		{env, []string{"run", "-name", "x", "-permits", "2", "-fencing", "--", "true"}, "redlock run: -fair and -fencing do not apply"},
		{env, []string{"elect", "-name", "x"}, "redlock elect: no command"},
		{env, []string{"elect", "--", "true"}, "redlock elect: -name is required"},
		{env, []string{"elect", "-permits", "2", "-name", "x", "--", "true"}, "usage: redlock elect"},
		{env, []string{"inspect"}, "redlock inspect: no lock name"},
		{env, []string{"inspect", "-bogus", "x"}, "usage: redlock inspect"},
		{env, []string{"inspect", "x", "y"}, `redlock inspect: unexpected argument "y"`},
		{env, []string{"demo", "-nodes", "0"}, "redlock demo: -nodes must be in 1..64"},
		{env, []string{"demo", "-workers"}, "usage: redlock demo"},
	} {
		c := runCLI(t, tc.env, tc.args...)
		c.expect(t, exitUsage, tc.want)
		if strings.Contains(c.stderr.String(), "secret") {
			t.Errorf("%v: stderr shows the password: %s", c.cmd.Args[1:], c.stderr.String())
		}
		if c.stdout.Len() > 0 {
			t.Errorf("%v: wrote to stdout: %s", c.cmd.Args[1:], c.stdout.String())
		}
	}
	for _, command := range []string{"run", "elect", "inspect", "init", "demo"} {
		c := runCLI(t, env, command, "-h")
		c.expect(t, exitOK, "usage: redlock "+command, "Example:", "-nodes")
		if command != "demo" && !strings.Contains(c.stderr.String(), "125") {
			t.Errorf("redlock %s -h does not list the exit statuses: %s", command, c.stderr.String())
		}
	}
}

// TestUnreachable: with no quorum of nodes answering, run and inspect exit
// 125 with one line that names the failing nodes.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	urls := []string{closedPort(t), closedPort(t), closedPort(t)}
	env := nodesEnvFor(urls)
	for _, args := range [][]string{
		{"run", "-name", "x", "--", "true"},
		{"inspect", "x"},
	} {
		c := runCLI(t, env, args...)
		want := []string{"redlock " + args[0] + ": "}
		for i, url := range urls {
			want = append(want, fmt.Sprintf("node %d (%s)", i, strings.TrimPrefix(url, "redis://")))
		}
		c.expect(t, exitError, want...)
		if lines := strings.Count(strings.TrimSpace(c.stderr.String()), "\n") + 1; lines != 1 {
			t.Errorf("%v: stderr has %d lines, want 1: %s", args, lines, c.stderr.String())
		}
	}
}
