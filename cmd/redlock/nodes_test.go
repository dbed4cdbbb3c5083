package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/redlock/redlocktest"
)

// TestNodes_hostPortIsARedisURL: a node given as host:port, as people
// paste addresses, is redis://host:port for every command.
func TestNodes_hostPortIsARedisURL(t *testing.T) {
	t.Parallel()
	addrs := redlocktest.Start(t, 3).Addrs()
	env := nodesEnvFor(addrs) // 127.0.0.1:PORT, no scheme
	for _, args := range [][]string{
		{"init"},
		{"init", "-nodes", addrs[0]},
		{"init", addrs[1], addrs[2], "-prefix", "redlock:"},
		{"run", "-name", "bare", "--", "true"},
		{"inspect", "bare"},
		{"unlock", "-force", "bare"},
		{"demo", "-nodes", strings.Join(addrs, ","), "-duration", "1s", "-workers", "2"},
	} {
		c := runCLI(t, env, args...)
		c.expect(t, exitOK)
	}
}
