// Package checker is the safety checker: it records every grant of a lock
// as an interval on one monotonic clock and reports any two owners whose
// intervals overlap, and any fencing token that does not increase.
package checker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Grant is one lease as its holder saw it. Acquired is when Lock returned,
// Released when Unlock was called (zero if never), Until the end of its
// validity window at that moment. The holder may act on the resource
// within [Acquired, min(Released, Until)]; all three come from time.Now in
// one process, so they compare on the monotonic clock.
type Grant struct {
	Name     string
	Owner    string
	Token    uint64 // fencing token; 0 when fencing is off
	Acquired time.Time
	Released time.Time
	Until    time.Time
	// Shared: a read hold of a read-write lock. Read holds may overlap
	// each other (they share one Owner, the readers'), never another
	// owner's grant; they carry no token, and are left out of the token
	// check.
	Shared bool
}

// End is the end of the interval in which the holder could act.
func (g Grant) End() time.Time {
	if !g.Released.IsZero() && g.Released.Before(g.Until) {
		return g.Released
	}
	return g.Until
}

// Violation is a safety failure.
type Violation struct {
	Name   string
	First  Grant
	Second Grant
	Reason string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s: %s [token %d, %s] and %s [token %d, %s]", v.Name, v.Reason,
		v.First.Owner, v.First.Token, span(v.First), v.Second.Owner, v.Second.Token, span(v.Second))
}

func span(g Grant) string {
	return fmt.Sprintf("+%v..+%v", g.Acquired.Sub(epoch), g.End().Sub(epoch))
}

// epoch makes printed times short and comparable.
var epoch = time.Now()

// Checker collects grants from many goroutines.
type Checker struct {
	mu     sync.Mutex
	grants []Grant
	limits map[string]int // names whose grants may overlap: at most this many at once
}

// Limit lets grants of name overlap, at most k at once (a semaphore of k
// permits): a grant made while k others are valid is a violation. Tokens
// of such a name are not checked.
func (c *Checker) Limit(name string, k int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits == nil {
		c.limits = make(map[string]int)
	}
	c.limits[name] = k
}

// New returns an empty Checker.
func New() *Checker { return &Checker{} }

// Record adds one finished grant.
func (c *Checker) Record(g Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grants = append(c.grants, g)
}

// Len is the number of grants recorded.
func (c *Checker) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.grants)
}

// Grants returns a copy of the grants recorded so far, in the order they
// were recorded.
func (c *Checker) Grants() []Grant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.grants)
}

// Violations checks every lock name: grants of different owners must not
// overlap, and with fencing (any non-zero token) tokens must strictly
// increase in the order of grant, except between holds of one owner
// (reentrant holds share the lock and may share a token).
func (c *Checker) Violations() []Violation {
	grants := c.Grants()
	slices.SortStableFunc(grants, func(a, b Grant) int {
		if n := strings.Compare(a.Name, b.Name); n != 0 {
			return n
		}
		return a.Acquired.Compare(b.Acquired)
	})
	var violations []Violation
	for start := 0; start < len(grants); {
		end := start
		for end < len(grants) && grants[end].Name == grants[start].Name {
			end++
		}
		if k, ok := c.limit(grants[start].Name); ok {
			violations = append(violations, checkBound(grants[start:end], k)...)
		} else {
			violations = append(violations, checkName(grants[start:end])...)
		}
		start = end
	}
	return violations
}

// checkName checks the grants of one name, sorted by Acquired, in one
// pass: each grant is compared with the earlier grant of another owner that
// reaches furthest, and with the earlier grant of another owner that has the
// highest token.
func checkName(grants []Grant) []Violation {
	var violations []Violation
	var reach, fence leader
	for _, g := range grants {
		if prev, ok := reach.other(g.Owner); ok && prev.End().After(g.Acquired) {
			violations = append(violations, Violation{Name: g.Name, First: prev, Second: g, Reason: "overlapping grants"})
		}
		reach.offer(g, func(a, b Grant) bool { return a.End().After(b.End()) })
		if g.Shared {
			continue
		}
		if prev, ok := fence.other(g.Owner); ok && (prev.Token != 0 || g.Token != 0) && g.Token <= prev.Token {
			violations = append(violations, Violation{Name: g.Name, First: prev, Second: g, Reason: "fencing token did not increase"})
		}
		fence.offer(g, func(a, b Grant) bool { return a.Token > b.Token })
	}
	return violations
}

func (c *Checker) limit(name string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.limits[name]
	return k, ok
}

// checkBound checks the grants of one name, sorted by Acquired: when each
// is made, fewer than k others may still be valid.
func checkBound(grants []Grant, k int) []Violation {
	var violations []Violation
	var valid []Grant // grants whose interval has not ended, as of the current one
	for _, g := range grants {
		valid = slices.DeleteFunc(valid, func(prev Grant) bool { return !prev.End().After(g.Acquired) })
		if len(valid) >= k {
			reason := fmt.Sprintf("%d grants at once, %d allowed", len(valid)+1, k)
			violations = append(violations, Violation{Name: g.Name, First: valid[0], Second: g, Reason: reason})
		}
		valid = append(valid, g)
	}
	return violations
}

// leader keeps the best grant so far and the best grant of any other
// owner, so that "the best earlier grant not of owner X" is always at hand.
type leader struct {
	best, runnerUp Grant
	have, haveRun  bool
}

func (l *leader) offer(g Grant, better func(a, b Grant) bool) {
	switch {
	case !l.have:
		l.best, l.have = g, true
	case g.Owner == l.best.Owner:
		if better(g, l.best) {
			l.best = g
		}
	case better(g, l.best):
		l.runnerUp, l.haveRun = l.best, true
		l.best = g
	case !l.haveRun || better(g, l.runnerUp):
		l.runnerUp, l.haveRun = g, true
	}
}

func (l *leader) other(owner string) (Grant, bool) {
	if l.have && l.best.Owner != owner {
		return l.best, true
	}
	return l.runnerUp, l.haveRun
}

// Err summarizes the violations, or is nil when there are none.
func (c *Checker) Err() error {
	violations := c.Violations()
	if len(violations) == 0 {
		return nil
	}
	lines := make([]string, 0, min(len(violations), 10))
	for _, v := range violations[:min(len(violations), 10)] {
		lines = append(lines, v.String())
	}
	return fmt.Errorf("checker: %d violations in %d grants:\n%s", len(violations), c.Len(), strings.Join(lines, "\n"))
}
