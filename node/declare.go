package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/declare.lua
	declareSource string
	//go:embed scripts/declare_common.lua
	declareCommon string

	declareScript = redis.NewScript(guardSource + declareCommon + declareSource)
)

// ErrNotNew reports a node that Declare refused: it holds keys under the
// prefix, loaded keys from disk at its start, records a loss of data, or
// voted for a lease that may still be live.
var ErrNotNew = errors.New("not a new node")

// NotNew says why Declare refused a node; it matches ErrNotNew.
type NotNew struct {
	Keys    []string      // up to 10 keys found under the prefix
	Marker  string        // the marker's value, when that is the reason
	Live    time.Duration // with Marker: how long a lease the node voted for may still last
	Loaded  string        // the count of keys the process loaded from disk at its start ("unknown" before Redis 7)
	Dropped string        // why keys may have gone since its start (see Quarantine.Why)
}

func (e *NotNew) Error() string {
	switch {
	case e.Live > 0:
		return fmt.Sprintf("not a new node: it voted so recently (marker %q) that a lease it granted may be live for %v more: "+
			"the set is in use", e.Marker, e.Live.Round(time.Millisecond))
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
// after its start (see scripts/guard.lua). It holds for the data the node
// holds now (its replication id): a restart or a promotion undoes it. It
// refuses (a *NotNew) a node that holds a key under prefix, loaded keys
// from disk at its start (or cannot say), dropped keys since (a flush, an
// eviction), whose marker records a loss, or that voted within the
// longest guard asked of it. A Redis Cluster member is declared shard by
// shard, a marker for every slot each serves (see declareCluster). A node
// restarted empty looks brand-new all the same: DeclareSet judges a whole
// set, and declares it only if no node shows that it served a lock.
func Declare(ctx context.Context, client redis.Scripter, prefix string) error {
	return declareNode(ctx, client, prefix, "declare")
}

// declareNode runs declare.lua in mode "check" (no write) or "declare".
func declareNode(ctx context.Context, client redis.Scripter, prefix, mode string) error {
	if cluster, ok := client.(*redis.ClusterClient); ok {
		return declareCluster(ctx, cluster, prefix, mode)
	}
	marker := MarkerFor(client, prefix+"node", "")
	reply, err := declareScript.Run(ctx, client, []string{marker}, globEscape(prefix)+"*", marker, mode).Result()
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
	case words[0] == "live" && len(words) == 3:
		if ms, err := strconv.ParseInt(words[2], 10, 64); err == nil && ms > 0 {
			return &NotNew{Marker: words[1], Live: time.Duration(ms) * time.Millisecond}
		}
	case words[0] == "loaded" && len(words) == 2:
		return &NotNew{Loaded: words[1]}
	case words[0] == "dropped" && len(words) == 2:
		return &NotNew{Dropped: words[1]}
	case words[0] == "keys" && len(words) > 1:
		return &NotNew{Keys: words[1:]}
	}
	return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
}

// SetRefused is DeclareSet's error: the nodes that refused or did not
// answer, each with why. errors.Is finds ErrNotNew, or a node's own error.
type SetRefused struct {
	Nodes    []NodeRefused // in node order
	Total    int           // nodes in the set
	Declared int           // declared all the same: 0 unless one refused between the check and the declaration
}

// NodeRefused is one node's part of a SetRefused.
type NodeRefused struct {
	Node int    // its index in the set
	Addr string // its address, when the client tells it
	Err  error  // a *NotNew, or the call's error
}

func (e *SetRefused) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "declared %d of %d nodes:", e.Declared, e.Total)
	for i, n := range e.Nodes {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " node %d", n.Node)
		if n.Addr != "" {
			fmt.Fprintf(&b, " (%s)", n.Addr)
		}
		fmt.Fprintf(&b, ": %v", n.Err)
	}
	return b.String()
}

func (e *SetRefused) Unwrap() []error {
	errs := make([]error, len(e.Nodes))
	for i, n := range e.Nodes {
		errs[i] = n.Err
	}
	return errs
}

// DeclareSet declares every node of a set new (as Declare), or none. A
// node restarted empty passes every check of its own, so one node that
// is not new (it holds keys under prefix, voted for a lease that may be
// live, records a loss), or that does not answer, means the set may hold
// a live lease the others forgot: then it declares none (a *SetRefused
// naming each such node). It checks every node first, then declares each;
// a node that refuses in between (a lock taken meanwhile) is reported,
// the others stay declared.
func DeclareSet(ctx context.Context, clients []redis.Scripter, prefix string) error {
	if refused := declareEach(ctx, clients, prefix, "check"); refused != nil {
		return refused
	}
	if refused := declareEach(ctx, clients, prefix, "declare"); refused != nil {
		refused.Declared = len(clients) - len(refused.Nodes)
		return refused
	}
	return nil
}

// declareEach runs declareNode in mode on every node at once; nil when
// every node passed.
func declareEach(ctx context.Context, clients []redis.Scripter, prefix, mode string) *SetRefused {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, client := range clients {
		wg.Go(func() { errs[i] = declareNode(ctx, client, prefix, mode) })
	}
	wg.Wait()
	refused := &SetRefused{Total: len(clients)}
	for i, err := range errs {
		if err != nil {
			refused.Nodes = append(refused.Nodes, NodeRefused{Node: i, Addr: addrOf(clients[i]), Err: err})
		}
	}
	if len(refused.Nodes) == 0 {
		return nil
	}
	return refused
}

// addrOf is a client's address, or "" when it does not tell.
func addrOf(client redis.Scripter) string {
	if c, ok := client.(interface{ Options() *redis.Options }); ok {
		return c.Options().Addr
	}
	return ""
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
	return ProbeMarker(ctx, client, MarkerFor(client, prefix+"node", ""), guard)
}

// ProbeMarker is Probe of the marker named marker (see MarkerFor).
func ProbeMarker(ctx context.Context, client redis.Scripter, marker string, guard time.Duration) error {
	reply, err := guardProbe.Run(ctx, client, []string{marker}, milliseconds(guard)).Result()
	if err != nil {
		return quarantined(err)
	}
	if reply != "votes" {
		return fmt.Errorf("%w to probe: %v", ErrBadReply, reply)
	}
	return nil
}
