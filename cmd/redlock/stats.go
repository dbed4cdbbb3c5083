package main

import (
	"fmt"
	"io"
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
	name                             string
	sections                         int64
	waits                            []time.Duration // sorted
	lockErrs, unlockErrs, lostLeases int64
}

// add counts other's sections, errors and waits in row too.
func (row *clientStats) add(other clientStats) {
	row.sections += other.sections
	row.waits = append(row.waits, other.waits...)
	row.lockErrs += other.lockErrs
	row.unlockErrs += other.unlockErrs
	row.lostLeases += other.lostLeases
}

// tally makes a row per lock kind and client that had workers, then the
// total.
func (s *session) tally(results []workerResult) []clientStats {
	var rows []clientStats
	total := clientStats{name: "total"}
	for k, kind := range s.kinds {
		for client := range s.clients {
			row := clientStats{name: kind.label() + ", " + clientNames[client]}
			workers := 0
			for _, r := range results {
				if r.kind == k && r.client == client {
					row.waits = append(row.waits, r.waits...)
					workers++
				}
			}
			if workers == 0 {
				continue
			}
			stats := &kind.stats[client]
			row.sections, row.lockErrs = stats.Sections.Load(), stats.LockErrors.Load()
			row.unlockErrs, row.lostLeases = stats.UnlockErrors.Load(), stats.LostLeases.Load()
			slices.Sort(row.waits)
			rows = append(rows, row)
			total.add(row)
		}
	}
	slices.Sort(total.waits)
	return append(rows, total)
}

// report prints the summary and returns the exit status. Its last line is
// always "violations: N", for scripts to grep.
func (s *session) report(results []workerResult, interrupted bool) int {
	var lost int64
	counters := make([]string, len(s.kinds))
	for i, kind := range s.kinds {
		lost += kind.stats[0].LostUpdates.Load() + kind.stats[1].LostUpdates.Load()
		counters[i] = fmt.Sprintf("%s %d", kind.label(), s.records.Value(kind.name))
	}
	violations := s.check.Violations()

	s.outMu.Lock()
	defer s.outMu.Unlock()
	out := s.stdout
	fmt.Fprintln(out)
	s.writeStats(out, results)
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

// writeStats writes the table of sections, waits and errors, each lock's
// handoff times and the first worker's last error, if any.
func (s *session) writeStats(out io.Writer, results []workerResult) {
	table := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "\tsections\tlock wait p50\tp99\tmax\tlock errors\tunlock errors\tlost leases\t")
	for _, row := range s.tally(results) {
		fmt.Fprintf(table, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t\n", row.name, row.sections,
			short(percentile(row.waits, 50)), short(percentile(row.waits, 99)), short(percentile(row.waits, 100)),
			row.lockErrs, row.unlockErrs, row.lostLeases)
	}
	_ = table.Flush()
	for _, kind := range s.kinds {
		all := kind.handoffs.total()
		fmt.Fprintf(out, "handoff %s (Unlock to the next waiter's grant): p50 %s, p99 %s, max %s over %d handoffs\n", kind.label(),
			short(percentile(all, 50)), short(percentile(all, 99)), short(percentile(all, 100)), len(all))
	}
	for _, r := range results {
		if r.lastErr != nil {
			fmt.Fprintf(out, "last lock/unlock error (%s): %s\n", clientNames[r.client], firstLine(r.lastErr))
			break
		}
	}
}
