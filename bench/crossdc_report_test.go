package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// freshSteadyLocks is how many Locks each fresh Client makes after its
// first, for its steady p50.
const freshSteadyLocks = 5

// setupFresh: cfg.fresh times, Dial a Client and Lock at once (timed: its
// first Lock), then freshSteadyLocks more Lock+Unlock cycles on the same
// name (their Locks timed: its steady state).
func setupFresh(b *testing.B, s *site, cfg xdcConfig) (func() xdcLog, nodeErrs) {
	errs := make(nodeErrs, len(s.proxies))
	return func() xdcLog {
		var log xdcLog
		for range cfg.fresh {
			c := s.ours(b, errs)
			l := redlockLocker{c.Mutex(lockName("xdc-fresh"))}
			first := sequential(1, func(int) locker { return l }, true)
			steady := sequential(freshSteadyLocks, func(int) locker { return l }, true)
			log.lat = append(log.lat, first.lat...)
			log.steady = append(log.steady, steady.lat...)
			for _, part := range []xdcLog{first, steady} {
				for range part.errs {
					log.fail(part.err)
				}
			}
			if err := c.Close(); err != nil {
				log.fail(fmt.Errorf("close: %w", err))
			}
		}
		return log
	}, errs
}

// BenchmarkCrossDC measures the lock across datacenters: 5 local nodes,
// each behind a delay proxy with the RTT of a profile (BENCH_PROFILE, all
// of P1, P2, P3 by default), our Client (Dial, default options unless a
// figure says otherwise) against redsync (defaults) through the same
// proxies. Sub-benchmarks are profile=…/case=…/lib=…; each profile prints
// its table (Markdown) at the end. Run it with -benchtime 1x; see README.md for the
// figures.
func BenchmarkCrossDC(b *testing.B) {
	cfg := loadXDCConfig(b)
	for _, prof := range cfg.profiles {
		b.Run("profile="+prof.name, func(b *testing.B) {
			s := startSite(b, prof)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.calibrate(ctx); err != nil {
				b.Fatal(err)
			}
			for _, off := range s.check() {
				fmt.Printf("    calibration: %s (a loaded machine?)\n", off)
			}
			b.Run("case=rtt", func(b *testing.B) { s.reportRTT(b) })
			for _, c := range crossDCCases() {
				b.Run("case="+c.kase+"/lib="+c.lib, func(b *testing.B) { s.measure(b, cfg, c) })
			}
			fmt.Print(s.table()) // stdout: benchstat ignores these lines
		})
	}
}

// reportRTT reports the calibrated PING RTT through each proxy.
func (s *site) reportRTT(b *testing.B) {
	for i, m := range s.measured {
		b.ReportMetric(millis(m), fmt.Sprintf("n%d-rtt-ms", i))
	}
	b.ReportMetric(millis(s.prof.quorumRTT()), "quorum-rtt-ms")
}

// xdcRow is one figure of a profile's table.
type xdcRow struct {
	kase, lib  string
	p50        time.Duration
	ratio      float64 // vs ref; 0: none
	ref        string  // "redsync", or "steady" for a fresh Client's first Lock
	samples    int
	errs       int
	cmds       []float64 // per node, per cycle (or handoff)
	nodeErrs   []int64   // per node, our Clients' NodeError events
	lastErrs   []string  // per node with events, the last one's text
	firstError error
}

func (s *site) measure(b *testing.B, cfg xdcConfig, c xdcCase) {
	run, errs := c.setup(b, s, cfg)
	ctx := context.Background()
	before, err := s.nodeCommands(ctx)
	if err != nil {
		b.Fatal(err)
	}
	errsBefore := errs.snapshot()
	log := run()
	after, err := s.nodeCommands(ctx)
	if err != nil {
		b.Fatal(err)
	}
	row := xdcRow{kase: c.kase, lib: c.lib, samples: len(log.lat), errs: log.errs, firstError: log.err}
	row.p50 = percentile(sortedCopy(log.lat), 0.5)
	units := float64(max(len(log.lat)+log.errs, 1))
	errsAfter := errs.snapshot()
	for i := range after {
		row.cmds = append(row.cmds, float64(after[i]-before[i]-1)/units) // -1: the first INFO
		if errsAfter != nil {
			row.nodeErrs = append(row.nodeErrs, errsAfter[i]-errsBefore[i])
			if errsAfter[i] > errsBefore[i] {
				row.lastErrs = append(row.lastErrs, fmt.Sprintf("n%d: %s", i, errs.lastErr(i)))
			}
		}
	}
	s.compare(&row, log)
	s.rows = append(s.rows, row)
	s.report(b, row)
}

// compare sets row's ratio: a fresh Client's first Lock against its steady
// Locks, ours against redsync's row of the same case.
func (s *site) compare(row *xdcRow, log xdcLog) {
	if len(log.steady) > 0 {
		if steady := percentile(sortedCopy(log.steady), 0.5); steady > 0 {
			row.ratio, row.ref = float64(row.p50)/float64(steady), "steady"
		}
		return
	}
	for _, other := range s.rows {
		if other.kase == row.kase && other.lib == "redsync" && row.lib != "redsync" && other.p50 > 0 {
			row.ratio, row.ref = float64(row.p50)/float64(other.p50), "redsync"
		}
	}
}

func (s *site) report(b *testing.B, row xdcRow) {
	if row.errs > 0 {
		b.Logf("%d failed, first: %v", row.errs, row.firstError)
	}
	b.ReportMetric(float64(row.p50.Nanoseconds()), "ns/op")
	b.ReportMetric(millis(row.p50), "p50-ms")
	b.ReportMetric(float64(row.p50)/float64(s.prof.quorumRTT()), "x-quorum")
	if row.ratio > 0 {
		b.ReportMetric(row.ratio, "ratio-vs-"+row.ref)
	}
	b.ReportMetric(float64(row.errs), "errors")
	for i, c := range row.cmds {
		b.ReportMetric(c, fmt.Sprintf("n%d-cmds/cycle", i))
	}
	for i, e := range row.nodeErrs {
		b.ReportMetric(float64(e), fmt.Sprintf("n%d-node-errs", i))
	}
}

// table is the profile's figures as a Markdown table: p50, as a multiple
// of the quorum RTT, against the reference, commands per cycle on each
// node and our Clients' node errors; then each row's last node errors.
func (s *site) table() string {
	var w strings.Builder
	q := s.prof.quorumRTT()
	fmt.Fprintf(&w, "\n#### %s: RTT ms target %s, measured %s; quorum RTT %v\n\n",
		s.prof.name, fmtMillis(s.prof.rtts), fmtMillis(s.measured), q)
	w.WriteString("| case | lib | p50 ms | × quorum | ratio | cmds/cycle n0…n4 | node errs n0…n4 |\n")
	w.WriteString("|---|---|---:|---:|---|---|---|\n")
	var notes []string
	for _, r := range s.rows {
		ratio := ""
		if r.ratio > 0 {
			ratio = fmt.Sprintf("%.2f vs %s", r.ratio, r.ref)
		}
		cmds := make([]string, len(r.cmds))
		for i, c := range r.cmds {
			cmds[i] = fmt.Sprintf("%.1f", c)
		}
		errs := "–"
		if r.nodeErrs != nil {
			errs = strings.Trim(fmt.Sprint(r.nodeErrs), "[]")
		}
		p50 := fmt.Sprintf("%.1f", millis(r.p50))
		if r.errs > 0 {
			p50 += fmt.Sprintf(" (%d of %d failed)", r.errs, r.errs+r.samples)
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %.2f | %s | %s | %s |\n", r.kase, r.lib, p50,
			float64(r.p50)/float64(q), ratio, strings.Join(cmds, " "), errs)
		for _, e := range r.lastErrs {
			notes = append(notes, fmt.Sprintf("- %s/%s, last error on %s", r.kase, r.lib, e))
		}
	}
	if len(notes) > 0 {
		w.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return w.String()
}

func fmtMillis(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.1f", millis(d))
	}
	return strings.Join(parts, "/")
}
