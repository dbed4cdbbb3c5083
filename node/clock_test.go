package node

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// simulated reads a simulated node clock running rate times as fast as
// real time, through round trips of random length: TIME runs at a random
// instant inside each.
type simulated struct {
	rng   *rand.Rand
	now   time.Time // real time (carries no monotonic reading: Sub is exact)
	node  time.Time // the node's clock
	rate  float64
	maxRT time.Duration
	// midway: TIME runs in the middle half of the round trip (a request
	// and its answer each take some of it); otherwise anywhere in it.
	midway bool
}

func newSimulated(rate float64, maxRT time.Duration, seed uint64) *simulated {
	start := time.Unix(1_800_000_000, 0)
	return &simulated{rng: rand.New(rand.NewPCG(seed, 1)), now: start, node: start, rate: rate, maxRT: maxRT}
}

// advance lets d pass in real time.
func (s *simulated) advance(d time.Duration) {
	s.now = s.now.Add(d)
	s.node = s.node.Add(time.Duration(float64(d) * s.rate))
}

// read is one round trip that reads the node's clock.
func (s *simulated) read() sample {
	rt := time.Duration(s.rng.Int64N(int64(s.maxRT)) + 1)
	at := time.Duration(s.rng.Int64N(int64(rt)))
	if s.midway {
		rt = s.maxRT/10 + time.Duration(s.rng.Int64N(int64(s.maxRT*9/10))) // no round trip under 100 µs
		at = rt/4 + time.Duration(s.rng.Int64N(int64(rt/2)+1))
	}
	sent := s.now
	s.advance(at)
	node := s.node.Truncate(time.Microsecond) // TIME's resolution
	s.advance(rt - at)
	return sample{sent: sent, got: s.now, node: node}
}

var defaultCheck = ClockCheck{MaxRate: 1.01, Hold: 2 * time.Second}

// A node whose clock runs at most as fast as the drift factor allows is
// never accused, whatever the round trips and the spacing of calls.
func TestClock_inBoundsNeverAccused(t *testing.T) {
	for _, rate := range []float64{0.5, 0.99, 1, 1.005, 1.0099} {
		for seed := range uint64(20) {
			sim := newSimulated(rate, 20*time.Millisecond, seed)
			var c clock
			for call := range 400 {
				if verdict := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]; verdict != nil && call > 0 {
					t.Fatalf("rate %v, seed %d, call %d: accused: %v", rate, seed, call, verdict)
				}
				sim.advance(time.Duration(sim.rng.Int64N(int64(300 * time.Millisecond))))
			}
		}
	}
}

// A clock ten times too fast is caught by the first pair of readings one
// round trip apart (a Client's probe, then its first call), and a clock 5 %
// too fast within the readings of 1.6 s.
func TestClock_fastCaught(t *testing.T) {
	for seed := range uint64(50) {
		sim := newSimulated(10, time.Millisecond, seed)
		sim.midway = true
		var c clock
		c.observe(sim.read(), nil) // the probe
		verdict := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]
		var q *ClockQuarantine
		if !errors.As(verdict, &q) || !errors.Is(verdict, ErrQuarantined) || q.Rate <= 1.01 || Answered(verdict) || !Unknown(verdict) {
			t.Fatalf("seed %d: a 10x clock's first checked call: %v; want a *ClockQuarantine of unknown fate", seed, verdict)
		}
	}
	sim := newSimulated(1.05, time.Millisecond, 7)
	var c clock
	caught := time.Duration(-1)
	for elapsed := time.Duration(0); elapsed < 2*time.Second; elapsed += 50 * time.Millisecond {
		if c.observe(sim.read(), []ClockCheck{defaultCheck})[0] != nil && caught < 0 {
			caught = elapsed
		}
		sim.advance(50 * time.Millisecond)
	}
	if caught < 0 || caught > 1600*time.Millisecond {
		t.Fatalf("a clock 5%% fast caught after %v; want within 1.6 s", caught)
	}
}

// A node found fast stays out until it has been in bounds for Hold after
// the last finding, then counts again; the threshold is per check.
func TestClock_holdAndThresholds(t *testing.T) {
	sim := newSimulated(3, time.Millisecond, 1)
	var c clock
	lax := ClockCheck{MaxRate: 4, Hold: time.Second}
	c.observe(sim.read(), nil)
	verdicts := c.observe(sim.read(), []ClockCheck{defaultCheck, lax, {}})
	if verdicts[0] == nil || verdicts[1] != nil || verdicts[2] != nil {
		t.Fatalf("3x clock: verdicts %v; want only the 1.01 check to fail", verdicts)
	}
	sim.rate = 1 // fixed
	var back time.Duration
	for elapsed := time.Duration(0); elapsed < 10*time.Second; elapsed += 100 * time.Millisecond {
		sim.advance(100 * time.Millisecond)
		if c.observe(sim.read(), []ClockCheck{defaultCheck})[0] == nil {
			back = elapsed
			break
		}
	}
	// The readings of the fast time stay in the ring for up to 1.6 s, then
	// the hold (2 s) runs from the last finding.
	if back < defaultCheck.Hold || back > defaultCheck.Hold+2*time.Second {
		t.Fatalf("back in bounds after %v; want after the hold %v, within the ring's 1.6 s more", back, defaultCheck.Hold)
	}
}

// A clock stepped back is not accused; readings start over from it, and
// the call that saw the step is not counted (nothing to compare it with).
func TestClock_stepBack(t *testing.T) {
	sim := newSimulated(1, time.Millisecond, 3)
	var c clock
	c.observe(sim.read(), nil)
	sim.advance(100 * time.Millisecond)
	if v := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]; v != nil {
		t.Fatal(v)
	}
	sim.node = sim.node.Add(-time.Hour)
	var q *ClockQuarantine
	if v := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]; !errors.As(v, &q) || q.Rate != 0 {
		t.Fatalf("call after a step back: %v; want not counted, rate unknown", v)
	}
	sim.advance(10 * time.Millisecond)
	if v := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]; v != nil {
		t.Fatalf("the next call: %v", v)
	}
}

// A forward jump is a clock that ran fast: caught.
func TestClock_jumpForward(t *testing.T) {
	sim := newSimulated(1, time.Millisecond, 4)
	var c clock
	c.observe(sim.read(), nil)
	sim.node = sim.node.Add(5 * time.Second)
	sim.advance(time.Second)
	if v := c.observe(sim.read(), []ClockCheck{defaultCheck})[0]; !errors.Is(v, ErrQuarantined) {
		t.Fatalf("after a 5 s jump: %v", v)
	}
}

// The offset a request's deadline uses follows a clock stepped forward at
// once (the reading disagrees with the kept one beyond both round trips),
// though the kept reading had the shorter round trip; a reading within the
// round trips of the kept one does not replace it. Old readings still give
// an offset: clocks drift by milliseconds a minute at worst.
func TestClock_offsetFollowsAStep(t *testing.T) {
	var c clock
	base := time.Unix(1_800_000_000, 0)
	read := func(at time.Time, trip, offset time.Duration) sample {
		return sample{sent: at, got: at.Add(trip), node: at.Add(trip / 2).Add(offset)}
	}
	c.note(read(base, time.Millisecond, 5*time.Millisecond))
	c.note(read(base.Add(time.Second), 3*time.Millisecond, 6*time.Millisecond)) // within the trips: kept
	if offset, _, ok := c.anyOffset(); !ok || offset != 5*time.Millisecond {
		t.Fatalf("offset %v, %v: want the reading of the shorter round trip, 5ms", offset, ok)
	}
	c.note(read(base.Add(2*time.Second), 3*time.Millisecond, time.Hour)) // stepped an hour ahead
	if offset, _, ok := c.anyOffset(); !ok || offset != time.Hour {
		t.Fatalf("offset %v, %v after a step: want 1h", offset, ok)
	}
	var fresh clock
	if _, _, ok := fresh.anyOffset(); ok {
		t.Fatal("an offset without any reading")
	}
}
