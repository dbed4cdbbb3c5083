package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/declare.lua
	declareSource string

	declareScript = redis.NewScript(guardSource + declareSource)
)

// ErrNotNew reports a node that Declare refused: it holds keys under the
// prefix, loaded keys from disk at its start, or records a loss of data.
var ErrNotNew = errors.New("not a new node")

// NotNew says why Declare refused a node; it matches ErrNotNew.
type NotNew struct {
	Keys    []string // up to 10 keys found under the prefix
	Marker  string   // the marker's value, when that is the reason
	Loaded  string   // the count of keys the process loaded from disk at its start ("unknown" before Redis 7)
	Dropped string   // why keys may have gone since its start (see Quarantine.Why)
}

func (e *NotNew) Error() string {
	switch {
	case e.Marker != "":
		return fmt.Sprintf("not a new node: its marker %q records a loss of data; it votes once the restart guard has passed", e.Marker)
	case e.Loaded == "unknown":
		return "not a new node, or it cannot tell: it does not say how many keys it loaded at its start (Redis before 7); it votes once the restart guard has passed"
	case e.Loaded != "":
		return fmt.Sprintf("not a new node: it loaded %s keys from disk at its start; it votes once the restart guard has passed", e.Loaded)
	case e.Dropped != "":
		return fmt.Sprintf("not a new node: keys were dropped since it started (%s: FLUSHALL, FLUSHDB, SWAPDB, eviction, DEBUG, "+
			"REPLICAOF or CONFIG RESETSTAT, or INFO refused); it votes once the restart guard has passed", e.Dropped)
	}
	return fmt.Sprintf("not a new node: it holds lock keys (%s)", strings.Join(e.Keys, ", "))
}

func (e *NotNew) Is(target error) bool { return target == ErrNotNew }

// Declare tells a brand-new node, one that never held a lock, that its
// data is complete, so that it votes at once instead of a restart guard
// after its start (see scripts/guard.lua). It holds for the node's current
// process only: a restart undoes it. It refuses (a *NotNew) a node that
// holds a key under prefix, loaded keys from disk at its start (or cannot
// say), dropped keys since (a flush, an eviction), or whose marker records
// a loss; and a Redis Cluster (one marker per slot there: wait for the
// guard). A node restarted empty looks brand-new all the same: declare
// only nodes that never served a lock.
func Declare(ctx context.Context, client redis.Scripter, prefix string) error {
	if _, cluster := client.(*redis.ClusterClient); cluster {
		return errors.New("a Redis Cluster cannot be declared new: its nodes vote a restart guard after they start")
	}
	marker := prefix + "node"
	reply, err := declareScript.Run(ctx, client, []string{marker}, globEscape(prefix)+"*", marker).Result()
	if err != nil {
		return err
	}
	return decodeDeclared(reply)
}

func decodeDeclared(reply any) error {
	list, ok := reply.([]any)
	if !ok {
		return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
	}
	if len(list) == 0 {
		return nil
	}
	words := make([]string, len(list))
	for i, item := range list {
		if words[i], ok = item.(string); !ok {
			return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
		}
	}
	switch {
	case words[0] == "marker" && len(words) == 2:
		return &NotNew{Marker: words[1]}
	case words[0] == "loaded" && len(words) == 2:
		return &NotNew{Loaded: words[1]}
	case words[0] == "dropped" && len(words) == 2:
		return &NotNew{Dropped: words[1]}
	case words[0] == "keys" && len(words) > 1:
		return &NotNew{Keys: words[1:]}
	}
	return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
}

// globEscape quotes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	//go:embed scripts/probe.lua
	probeSource string

	guardProbe = redis.NewScript(guardSource + probeSource)
)

// Probe says how the restart guard judges the node at client now, with
// the marker under prefix and guard: nil when it votes, a *Quarantine when
// it does not. It makes no marker (what a lock script would do first).
func Probe(ctx context.Context, client redis.Scripter, prefix string, guard time.Duration) error {
	reply, err := guardProbe.Run(ctx, client, []string{prefix + "node"}, milliseconds(guard)).Result()
	if err != nil {
		return quarantined(err)
	}
	if reply != "votes" {
		return fmt.Errorf("%w to probe: %v", ErrBadReply, reply)
	}
	return nil
}
