package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandCount sums INFO stats total_commands_processed over the nodes.
// Redis counts the commands a Lua script runs (redis.call) as well as the
// EVAL/EVALSHA itself, so this is work done by the servers, not round trips;
// callCounter counts the round trips.
func (s *nodes) commandCount(ctx context.Context) (int64, error) {
	var total int64
	for i, admin := range s.admins {
		info, err := admin.Info(ctx, "stats").Result()
		if err != nil {
			return 0, fmt.Errorf("node %d: INFO stats: %w", i, err)
		}
		n, err := totalCommands(info)
		if err != nil {
			return 0, fmt.Errorf("node %d: %w", i, err)
		}
		total += n
	}
	return total, nil
}

// commandsBetween is the commands the nodes processed between two
// commandCount calls, without the INFO calls themselves: a node counts an
// INFO after answering it, so the first snapshot's INFO (one per node) is in
// the difference and the second one's is not.
func (s *nodes) commandsBetween(before, after int64) int64 {
	return after - before - int64(len(s.admins))
}

func totalCommands(info string) (int64, error) {
	for line := range strings.SplitSeq(info, "\r\n") {
		if value, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			return strconv.ParseInt(value, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO stats has no total_commands_processed")
}

// callCounter is a go-redis hook that counts the commands a library sends
// (n: one per command, also inside pipelines; a retried command counts once)
// and the round trips they took (trips: a pipeline counts once).
type callCounter struct{ n, trips atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}

// counts is a snapshot of what the nodes and a library's go-redis clients
// counted, so that a measured window is the difference of two.
type counts struct {
	cmds     int64         // INFO total_commands_processed, all nodes
	calls    int64         // commands the library sent (0 without a callCounter)
	trips    int64         // round trips they took
	redisCPU time.Duration // INFO used_cpu_user + used_cpu_sys, all nodes
	scripts  int64         // script calls (EVAL, EVALSHA, FCALL and their _RO forms), all nodes
	scriptT  time.Duration // the time the nodes spent in them (INFO commandstats usec)
	selfCPU  time.Duration // this process (client side), 0 where unknown
}

// snapshot takes counts; calls may be nil for a library that does not run
// on go-redis.
func (s *nodes) snapshot(ctx context.Context, calls *callCounter) (counts, error) {
	var c counts
	var err error
	if c.cmds, err = s.commandCount(ctx); err != nil {
		return c, err
	}
	if c.redisCPU, err = s.cpuTime(ctx); err != nil {
		return c, err
	}
	if c.scripts, c.scriptT, err = s.scriptTime(ctx); err != nil {
		return c, err
	}
	if calls != nil {
		c.calls, c.trips = calls.n.Load(), calls.trips.Load()
	}
	c.selfCPU = processCPU()
	return c, nil
}

// since is what happened between an earlier snapshot and c, without the
// INFO commands the snapshots themselves sent (see commandsBetween; the
// INFO cpu and commandstats of a snapshot are counted like its INFO stats).
func (c counts) since(s *nodes, before counts) counts {
	return counts{
		cmds:     c.cmds - before.cmds - 3*int64(len(s.admins)),
		scripts:  c.scripts - before.scripts,
		scriptT:  c.scriptT - before.scriptT,
		calls:    c.calls - before.calls,
		trips:    c.trips - before.trips,
		redisCPU: c.redisCPU - before.redisCPU,
		selfCPU:  c.selfCPU - before.selfCPU,
	}
}

// cpuTime sums the CPU time the redis-server processes used (INFO cpu).
func (s *nodes) cpuTime(ctx context.Context) (time.Duration, error) {
	var total float64
	for i, admin := range s.admins {
		info, err := admin.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, fmt.Errorf("node %d: INFO cpu: %w", i, err)
		}
		for _, field := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			v, err := infoFloat(info, field)
			if err != nil {
				return 0, fmt.Errorf("node %d: %w", i, err)
			}
			total += v
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// scriptCommands are the commandstats entries of script calls.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// scriptTime sums the script calls the nodes ran and the time they took
// (INFO commandstats; the commands a script runs are inside its time).
func (s *nodes) scriptTime(ctx context.Context) (int64, time.Duration, error) {
	var calls, usec int64
	for i, admin := range s.admins {
		info, err := admin.Info(ctx, "commandstats").Result()
		if err != nil {
			return 0, 0, fmt.Errorf("node %d: INFO commandstats: %w", i, err)
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if !ok || !slices.Contains(scriptCommands, name) {
				continue
			}
			n, u, err := commandStat(rest)
			if err != nil {
				return 0, 0, fmt.Errorf("node %d: cmdstat_%s: %w", i, name, err)
			}
			calls, usec = calls+n, usec+u
		}
	}
	return calls, time.Duration(usec) * time.Microsecond, nil
}

// commandStat reads calls and usec from "calls=N,usec=U,...".
func commandStat(fields string) (calls, usec int64, err error) {
	for field := range strings.SplitSeq(fields, ",") {
		key, value, _ := strings.Cut(field, "=")
		switch key {
		case "calls":
			calls, err = strconv.ParseInt(value, 10, 64)
		case "usec":
			usec, err = strconv.ParseInt(value, 10, 64)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return calls, usec, nil
}

func infoFloat(info, field string) (float64, error) {
	for line := range strings.SplitSeq(info, "\r\n") {
		if value, ok := strings.CutPrefix(line, field); ok {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, fmt.Errorf("INFO has no %s", strings.TrimSuffix(field, ":"))
}

// percentile returns the nearest-rank q-quantile (0 < q <= 1) of sorted
// durations, or 0 when there are none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
