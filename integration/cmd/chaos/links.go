package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/redlocktest/faultproxy"
)

// linkKind is a one-way fault on the link between one Client and one
// node. The nodes' image is FROM scratch (no tc) and the kernel has no
// netem, so the runner puts an in-process proxy (redlocktest/faultproxy) on
// every (Client, node) link, in front of the node's published port, and
// injects these faults there. Node faults stay Docker's (package nodes).
type linkKind string

const (
	holdRequests  linkKind = "hold requests"  // the Client's commands wait; held ones run when healed, late
	holdReplies   linkKind = "hold replies"   // the commands run; their answers wait
	delayRequests linkKind = "delay requests" // the Client's commands arrive late, their answers at once
)

// linkKinds lists every link fault.
var linkKinds = []linkKind{holdRequests, holdReplies, delayRequests}

// links is one proxy per (Client, node) link, and the faults on them.
type links struct {
	proxies [][]*faultproxy.Proxy // [client][node]

	mu     sync.Mutex
	faults map[[2]int]linkKind // (client, node) -> the fault on that link
}

// newLinks starts clients × len(addrs) proxies, Client k's to addrs[i] at
// proxies[k][i].
func newLinks(clients int, addrs []string) (*links, error) {
	l := &links{faults: map[[2]int]linkKind{}}
	for range clients {
		var row []*faultproxy.Proxy
		for _, addr := range addrs {
			proxy, err := faultproxy.New(addr)
			if err != nil {
				l.proxies = append(l.proxies, row)
				return nil, errors.Join(err, l.Close())
			}
			row = append(row, proxy)
		}
		l.proxies = append(l.proxies, row)
	}
	return l, nil
}

// urls are Client k's node URLs: its own proxies.
func (l *links) urls(k int) []string {
	urls := make([]string, len(l.proxies[k]))
	for i, proxy := range l.proxies[k] {
		urls[i] = "redis://" + proxy.Addr()
	}
	return urls
}

// inject puts Client k's link to node i under kind (delay: delayRequests).
func (l *links) inject(k, i int, kind linkKind, delay time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if have, ok := l.faults[[2]int{k, i}]; ok {
		return fmt.Errorf("client %d, node %d: link already faulty (%s)", k, i, have)
	}
	proxy := l.proxies[k][i]
	switch kind {
	case holdRequests:
		proxy.HoldRequests(true)
	case holdReplies:
		proxy.HoldReplies(true)
	case delayRequests:
		proxy.SetRequestLatency(delay)
	default:
		return fmt.Errorf("client %d, node %d: unknown link fault %q", k, i, kind)
	}
	l.faults[[2]int{k, i}] = kind
	return nil
}

// heal lifts the fault on Client k's link to node i, if any: what was held
// goes through now, in order.
func (l *links) heal(k, i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	proxy := l.proxies[k][i]
	proxy.HoldRequests(false)
	proxy.HoldReplies(false)
	proxy.SetRequestLatency(0)
	delete(l.faults, [2]int{k, i})
}

// healAll lifts every link fault.
func (l *links) healAll() {
	for k, row := range l.proxies {
		for i := range row {
			l.heal(k, i)
		}
	}
}

// faulty reports whether any Client's link to node i is under a fault.
func (l *links) faulty(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for link := range l.faults {
		if link[1] == i {
			return true
		}
	}
	return false
}

// Close lifts every fault and closes every proxy.
func (l *links) Close() error {
	l.healAll()
	var errs []error
	for _, row := range l.proxies {
		for _, proxy := range row {
			errs = append(errs, proxy.Close())
		}
	}
	return errors.Join(errs...)
}
