package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: always a value that was observed, so a p99 over few
// samples is not an invented interpolation. It is 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// short rounds a duration for the table: lock waits span microseconds to
// seconds, and three significant digits are all a reader can use.
func short(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// clientStats is one row of the table: one lock kind on one client, or
// the total.
type clientStats struct {
	name                 string
	sections             int64
	waits                []time.Duration // sorted
	lockErrs, unlockErrs int
	lostLeases           int
}

// tally makes a row per lock kind and client that had workers, then the
// total.
func (s *session) tally(results []workerResult) []clientStats {
	type key struct{ kind, client int }
	index := make(map[key]int)
	var rows []clientStats
	for kind := range s.kinds {
		for client := range s.clients {
			for _, r := range results {
				if r.kind == kind && r.client == client {
					index[key{kind, client}] = len(rows)
					rows = append(rows, clientStats{
						name:     s.kinds[kind].label + ", " + clientNames[client],
						sections: s.kinds[kind].sections[client].Load(),
					})
					break
				}
			}
		}
	}
	rows = append(rows, clientStats{name: "total", sections: s.sectionsDone()})
	total := &rows[len(rows)-1]
	for _, r := range results {
		for _, row := range []*clientStats{&rows[index[key{r.kind, r.client}]], total} {
			row.waits = append(row.waits, r.waits...)
			row.lockErrs += r.lockErrs
			row.unlockErrs += r.unlockErrs
			row.lostLeases += r.lostLeases
		}
	}
	for i := range rows {
		slices.Sort(rows[i].waits)
	}
	return rows
}

// report prints the summary and returns the exit status. Its last line is
// always "violations: N", for scripts to grep.
func (s *session) report(results []workerResult, interrupted bool) int {
	rows := s.tally(results)
	var lost int64
	counters := make([]string, len(s.kinds))
	for i, kind := range s.kinds {
		sections := kind.sections[0].Load() + kind.sections[1].Load()
		lost += sections - kind.counter.Load()
		counters[i] = fmt.Sprintf("%s %d", kind.label, kind.counter.Load())
	}
	violations := s.check.Violations()

	s.outMu.Lock()
	defer s.outMu.Unlock()
	out := s.stdout
	fmt.Fprintln(out)
	table := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "\tsections\tlock wait p50\tp99\tmax\tlock errors\tunlock errors\tlost leases\t")
	for _, row := range rows {
		fmt.Fprintf(table, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t\n", row.name, row.sections,
			short(percentile(row.waits, 50)), short(percentile(row.waits, 99)), short(percentile(row.waits, 100)),
			row.lockErrs, row.unlockErrs, row.lostLeases)
	}
	_ = table.Flush()
	for _, kind := range s.kinds {
		all := kind.handoffs.total()
		fmt.Fprintf(out, "handoff %s (Unlock to the next waiter's grant): p50 %s, p99 %s, max %s over %d handoffs\n", kind.label,
			short(percentile(all, 50)), short(percentile(all, 99)), short(percentile(all, 100)), len(all))
	}
	for _, r := range results {
		if r.lastErr != nil {
			fmt.Fprintf(out, "last lock/unlock error (%s): %s\n", clientNames[r.client], firstLine(r.lastErr))
			break
		}
	}
	for i, v := range violations {
		if i == 5 {
			fmt.Fprintf(out, "... and %d more\n", len(violations)-i)
			break
		}
		fmt.Fprintf(out, "VIOLATION %s\n", v)
	}
	fmt.Fprintf(out, "grants checked: %d\n", s.check.Len())
	fmt.Fprintf(out, "counters: %s\n", strings.Join(counters, ", "))
	fmt.Fprintf(out, "lost updates: %d\n", lost)
	fmt.Fprintf(out, "violations: %d\n", len(violations))

	switch {
	case len(violations) > 0 || lost != 0 || s.problems.Load() > 0:
		return exitFailure
	case interrupted:
		fmt.Fprintln(s.stderr, "redlock demo: interrupted")
		return exitInterrupted
	}
	return exitOK
}
