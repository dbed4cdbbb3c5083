package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/engine"
	"github.com/redis/go-redis/v9"
)

// nodesEnv names the node list when -nodes is not given, so that a script
// (or a shell profile) sets it once rather than on every command line.
const nodesEnv = "REDLOCK_NODES"

// nodesFlagHelp describes -nodes, the same for every command.
const nodesFlagHelp = "comma-separated node URLs, one per node: redis://[user:password@]host:port, rediss://..., " +
	"redis://sentinel:26379?master_name=M, redis+cluster://host:port?addr=host2:port, or host:port (default $" + nodesEnv + ")"

// nodeTimeout bounds each call to one node. It is the library's default: a
// dead node costs a command half a second, not the TCP timeout.
const nodeTimeout = redlock.DefaultNodeTimeout

// nodeURLs returns the URLs of -nodes, or of $REDLOCK_NODES when the flag
// is empty. An empty item (a stray comma) is an error rather than skipped,
// since it usually means a variable expanded to nothing.
func nodeURLs(flagValue string) ([]string, error) {
	list, from := flagValue, "-nodes"
	if list == "" {
		list, from = os.Getenv(nodesEnv), "$"+nodesEnv
	}
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("no nodes: give -nodes redis://host:port,... or set $%s", nodesEnv)
	}
	return parseNodeList(strings.Split(list, ","), from)
}

// parseNodeList checks each node of a list that came from (a flag, the
// environment or the arguments) and returns them as URLs. A bare
// host:port is taken as redis://host:port, as redis-cli -h/-p would take
// it: people paste addresses. A malformed item is named as given, with
// its password masked, so that the operator sees which one it is.
func parseNodeList(items []string, from string) ([]string, error) {
	var urls []string
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%s: node %d is empty", from, i)
		}
		if !strings.Contains(item, "://") {
			item = "redis://" + item
		}
		client, err := engine.DialNode(item, core.DefaultSettings())
		if err != nil {
			// url.Parse's errors repeat the whole URL, password included.
			message := strings.ReplaceAll(err.Error(), fmt.Sprintf("parse %q: ", item), "")
			return nil, fmt.Errorf("node %d %q: %s (want host:port, redis://[user:password@]host:port[/db], rediss://..., "+
				"redis://sentinel:26379?master_name=M or redis+cluster://host:port?addr=host2:port)",
				i, maskPassword(item), strings.ReplaceAll(message, item, maskPassword(item)))
		}
		_ = client.Close() // made only to check the URL: it never connected
		urls = append(urls, item)
	}
	return urls, nil
}

// maskPassword hides the password of a node URL that may not parse:
// everything between the user name's colon and the last '@', and the
// query, which may carry one (sentinel_password=, password=).
func maskPassword(raw string) string {
	if base, _, query := strings.Cut(raw, "?"); query {
		raw = base + "?…"
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// nodeSet is one go-redis client per node, for what the library does not
// do: inspect reads the keys, run checks reachability before it waits for
// the lock (its lock then uses redlock.Dial's own connections), and the
// demo watches the nodes' health.
type nodeSet struct {
	clients []redis.UniversalClient
	addrs   []string
	pings   sync.WaitGroup // quorumAnswers' pings still out
}

// dialNodes makes a client per URL (from nodeURLs). Nothing connects yet.
// An error shows a URL with its password masked.
func dialNodes(urls []string, timeout time.Duration) (*nodeSet, error) {
	ns := &nodeSet{}
	settings := core.DefaultSettings()
	settings.NodeTimeout = timeout // as redlock.Dial: every call is cut at the node timeout
	for i, url := range urls {
		client, err := engine.DialNode(url, settings)
		if err != nil { // parseNodeList checked it: not reached
			ns.close()
			return nil, fmt.Errorf("node %d: %s", i, strings.ReplaceAll(err.Error(), url, maskPassword(url)))
		}
		ns.clients = append(ns.clients, client)
		ns.addrs = append(ns.addrs, engine.AddrOf(client))
	}
	return ns, nil
}

func (ns *nodeSet) close() {
	for _, client := range ns.clients {
		_ = client.Close() // also ends a ping still waiting for its answer
	}
	ns.pings.Wait()
}

// universal is the node list as redlock.New takes it.
func (ns *nodeSet) universal() []redis.UniversalClient {
	clients := make([]redis.UniversalClient, len(ns.clients))
	for i, client := range ns.clients {
		clients[i] = client
	}
	return clients
}

// quorum is the number of nodes that must agree: a majority.
func (ns *nodeSet) quorum() int { return len(ns.clients)/2 + 1 }

// quorumAnswers pings every node at once and reports whether a quorum
// answered within the timeout. It returns as soon as one has, so a slow
// or paused node delays nothing then; otherwise it waits for every ping
// and returns the failures, one *redlock.NodeError per node.
func (ns *nodeSet) quorumAnswers(ctx context.Context, timeout time.Duration) (bool, []*redlock.NodeError) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	type answer struct {
		node int
		err  error
	}
	answers := make(chan answer, len(ns.clients))
	// A ping still out when a quorum answered runs on until its timeout
	// (go-redis does not cut a read on cancellation): close waits for it.
	defer cancel()
	for i, client := range ns.clients {
		ns.pings.Go(func() { answers <- answer{i, client.Ping(ctx).Err()} })
	}
	var failed []*redlock.NodeError
	ok := 0
	for range ns.clients {
		a := <-answers
		if a.err != nil {
			failed = append(failed, &redlock.NodeError{Node: a.node, Addr: ns.addrs[a.node], Err: a.err})
			continue
		}
		if ok++; ok >= ns.quorum() {
			return true, nil
		}
	}
	slices.SortFunc(failed, func(a, b *redlock.NodeError) int { return a.Node - b.Node })
	return false, failed
}

// each runs f on every node at once, each within timeout, and returns
// each node's error, in node order.
func (ns *nodeSet) each(ctx context.Context, timeout time.Duration, f func(context.Context, redis.UniversalClient) error) []error {
	errs := make([]error, len(ns.clients))
	var wg sync.WaitGroup
	for i, client := range ns.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = f(ctx, client)
		})
	}
	wg.Wait()
	return errs
}

// ping asks every node at once and returns the failures, one
// *redlock.NodeError per node that did not answer within the timeout.
func (ns *nodeSet) ping(ctx context.Context, timeout time.Duration) []*redlock.NodeError {
	errs := ns.each(ctx, timeout, func(ctx context.Context, client redis.UniversalClient) error { return client.Ping(ctx).Err() })
	var failed []*redlock.NodeError
	for i, err := range errs {
		if err != nil {
			failed = append(failed, &redlock.NodeError{Node: i, Addr: ns.addrs[i], Err: err})
		}
	}
	return failed
}

// nodeErrors collects every *redlock.NodeError in err's tree: the library
// joins one per failing node under ErrNoQuorum, and errors.As finds only
// the first.
func nodeErrors(err error) []*redlock.NodeError {
	var found []*redlock.NodeError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *redlock.NodeError:
			found = append(found, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return found
}

// describeNodes names failing nodes on one line: "node 1 (host:port):
// connection refused; node 2 (...): ...". Each node appears once.
func describeNodes(failed []*redlock.NodeError) string {
	seen := make(map[int]bool)
	var parts []string
	for _, e := range failed {
		if seen[e.Node] {
			continue
		}
		seen[e.Node] = true
		parts = append(parts, fmt.Sprintf("node %d (%s): %s", e.Node, e.Addr, oneLine(e.Err)))
	}
	return strings.Join(parts, "; ")
}

// oneLine keeps an error to one line: joined errors are newline-separated.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

// plain is oneLine without the library's own "redlock: " in front: the
// command's prefix ("redlock run: ") already says where it comes from.
func plain(err error) string {
	return strings.TrimPrefix(oneLine(err), "redlock: ")
}
