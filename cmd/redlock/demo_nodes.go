package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
)

// startNodes starts the local redis-server nodes in a temp dir. It returns
// their URLs, a stop function that the caller defers whatever the outcome
// (it stops the servers that started and removes the dir), and exitOK or
// the status to exit with.
func (s *session) startNodes(ctx context.Context) ([]string, func(func(string, error)), int) {
	noop := func(func(string, error)) {}
	if _, err := redisproc.LookPath(""); err != nil {
		fmt.Fprintln(s.stderr, "redlock demo: redis-server not found in PATH; install it with: apt-get install -y redis-server, or give -nodes URL,URL,...")
		return nil, noop, exitFailure
	}
	dir, err := os.MkdirTemp("", "redlock-demo-")
	if err != nil {
		fmt.Fprintf(s.stderr, "redlock demo: temp dir: %s\n", firstLine(err))
		return nil, noop, exitFailure
	}
	stop := func(cleanupFailed func(string, error)) {
		for i, server := range s.servers { // before the dir goes: servers write into it
			if err := server.Stop(); err != nil {
				cleanupFailed(fmt.Sprintf("stop node %d", i), err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			cleanupFailed("remove temp dir", err)
		}
	}
	s.servers = []*redisproc.Server{} // non-nil: the nodes are ours
	for i := range s.cfg.nodes {
		if ctx.Err() != nil {
			fmt.Fprintln(s.stderr, "redlock demo: interrupted")
			return nil, stop, exitInterrupted
		}
		// Brand-new nodes, as a user's are: connect declares them new
		// the way redlock init does.
		server, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(dir, fmt.Sprintf("node%d", i)), Undeclared: true})
		if err != nil {
			fmt.Fprintf(s.stderr, "redlock demo: start node %d: %s\n", i, firstLine(err))
			return nil, stop, exitFailure
		}
		s.servers = append(s.servers, server)
	}
	urls := make([]string, len(s.servers))
	for i, server := range s.servers {
		urls[i] = server.URL()
	}
	return urls, stop, exitOK
}

// connect makes the two clients, each with connections of its own as two
// processes would have. The demo's own nodes are declared new; nodes given
// by URL are pinged first: without a quorum the demo would only show
// errors.
func (s *session) connect(urls []string) int {
	for i := range s.clients {
		ns, err := dialNodes(urls, nodeTimeout)
		if err != nil {
			fmt.Fprintf(s.stderr, "redlock demo: %v\n", err)
			return exitUsage
		}
		client, err := redlock.New(ns.universal(), redlock.WithTTL(ttl))
		if err != nil {
			ns.close()
			fmt.Fprintf(s.stderr, "redlock demo: %s: %s\n", clientNames[i], oneLine(err))
			return exitFailure
		}
		s.clients[i], s.conns[i] = client, ns
	}
	s.addrs = s.conns[0].addrs
	if s.owned() {
		return s.declare()
	}
	ns := s.conns[0]
	if ok, failed := ns.quorumAnswers(context.Background(), nodeTimeout); !ok {
		fmt.Fprintf(s.stderr, "redlock demo: no quorum: %d of %d nodes reachable, %d needed: %s\n",
			len(ns.clients)-len(failed), len(ns.clients), ns.quorum(), describeNodes(failed))
		return exitFailure
	}
	return exitOK
}

// disconnect closes the clients (releasing what they hold), then their
// connections. It is deferred right after connect, whatever connect
// returned.
func (s *session) disconnect(cleanupFailed func(string, error)) {
	for i, client := range s.clients {
		if client == nil {
			continue
		}
		if err := client.Close(); err != nil {
			cleanupFailed("close "+clientNames[i], err)
		}
		s.conns[i].close()
	}
}

// declare declares the demo's own nodes new, by the path redlock init
// takes: they were just started and never held a lock, so they vote at
// once instead of a restart guard (the TTL) after their start.
func (s *session) declare() int {
	ns := s.conns[0]
	for i, err := range ns.declare(context.Background(), redlock.DefaultKeyPrefix, nodeTimeout) {
		if err != nil {
			fmt.Fprintf(s.stderr, "redlock demo: init node %d (%s): %s\n", i, ns.addrs[i], refusal(err))
			return exitFailure
		}
	}
	return exitOK
}
