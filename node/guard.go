package node

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The guard's parts, in the order every voting script (and the library)
// puts them in front of its body: one call's state; the node's INFO facts;
// the marker's reader and writer; the rules; the handoff's claim rule.
var (
	//go:embed scripts/call.lua
	callLua string
	//go:embed scripts/facts.lua
	factsLua string
	//go:embed scripts/marker.lua
	markerLua string
	//go:embed scripts/guard.lua
	guardLua string
	//go:embed scripts/handed.lua
	handedLua string

	guardSource = callLua + factsLua + markerLua + guardLua + handedLua
)

// ErrQuarantined marks a node that may have forgotten a lease (it
// restarted without persisting every write, lost its data, or is new) less
// than the restart guard ago: it does not vote (see scripts/guard.lua).
var ErrQuarantined = errors.New("quarantined")

// Why a node is quarantined: the rule of scripts/guard.lua that applied.
const (
	WhyNew       = "new"       // no marker; the process started at Since and dropped nothing since
	WhyRestarted = "restarted" // marker kept, but restarted at Since: what it loaded may lack leases
	WhyFlushed   = "flushed"   // keys dropped or replaced (flush, swap, RESTORE, DEBUG, eviction) since the marker counted
	WhyFailover  = "failover"  // promoted (REPLICAOF, FAILOVER) since it started, seen at Since
	WhyUnknown   = "unknown"   // no marker, and INFO is refused (ACL or rename): cannot tell
	WhyCluster   = "cluster"   // a Redis Cluster shard without its slot's marker, whose slots may have come from elsewhere
	WhyLost      = "lost"      // a marker made by an older version
)

// Risk is an assumption the restart guard cannot check on a node, so that
// the node refuses to vote (an *Unguarded) unless the user accepts it.
type Risk uint8

const (
	// RiskNoInfo: the lock's user may not run INFO. The guard then cannot
	// see a restart from a snapshot or a failover, only a missing marker.
	RiskNoInfo Risk = 1 << iota
	// RiskEviction: maxmemory with an evicting policy, which may evict a
	// lock key while the marker (no TTL) stays.
	RiskEviction

	allRisks = RiskNoInfo | RiskEviction
)

// guardArg is the guard's argument to a script: "<ms>[:<letters>]", a
// letter per risk accepted.
func (n *Node) guardArg(k Keys) string {
	guard := k.Guard
	if guard > 0 {
		guard = max(guard, time.Duration(n.calls.longest.Load()))
	}
	ms := milliseconds(guard)
	if k.Risks&allRisks == 0 {
		return ms
	}
	letters := []byte(ms + ":")
	if k.Risks&RiskNoInfo != 0 {
		letters = append(letters, 'i')
	}
	if k.Risks&RiskEviction != 0 {
		letters = append(letters, 'e')
	}
	return string(letters)
}

// ShareGuard makes longest the record of the longest guard any node of a
// set answered, shared by its nodes, and marker the marker Warm reads it
// from: a call's guard is at least that, so that a node that lost its
// marker (and its record) waits as long as the nodes that kept it. Call
// it before the node's first call.
func (n *Node) ShareGuard(marker string, longest *atomic.Int64) {
	n.marker, n.calls.longest = marker, longest
}

// ErrUnguarded marks a node that does not vote because the restart guard
// cannot see whether it lost a lease; it matches ErrQuarantined too.
// Trying again does not help until the node or the user's ACL changes.
var ErrUnguarded = errors.New("unguarded")

// Unguarded is a node's refusal to vote, by the restart guard, for what it
// cannot see; it names the remedy.
type Unguarded struct {
	Why    string // "noinfo", "evicts" or "replica"
	Policy string // the node's maxmemory-policy, with "evicts"
}

func (u *Unguarded) Error() string {
	if u.Why == "evicts" {
		return fmt.Sprintf("unguarded: maxmemory-policy %s may evict a lock key while the node's marker stays, "+
			"granting the lock again; set maxmemory-policy noeviction (or maxmemory 0), "+
			"or accept the risk with WithAcceptedRisks(RiskEviction)", u.Policy)
	}
	if u.Why == "replica" {
		return "unguarded: the node is a replica (role not master): a resync from its primary replaces its data, " +
			"lock keys and marker, without a trace; point the member at the primary (or a Sentinel-managed client)"
	}
	return "unguarded: the lock's user may not run INFO (an ACL or a renamed command), so a restart or a failover " +
		"cannot be seen; grant it +info (ACL SETUSER <user> +info), or accept the risk with WithAcceptedRisks(RiskNoInfo)"
}

func (u *Unguarded) Is(target error) bool { return target == ErrUnguarded || target == ErrQuarantined }

const unguardedPrefix = "UNGUARDED "

// Quarantine is a node's refusal to vote; it matches ErrQuarantined.
type Quarantine struct {
	Since time.Time // when the node started, or found its data missing (its clock)
	Until time.Time // when it votes again (its clock)
	Why   string    // one of the Why constants
	// Left is how long from the reply until the node votes again, as the
	// node measured it; -1 when the reply did not say.
	Left time.Duration
	// Live: other nodes of the same set answered the call (they serve
	// locks), so this one restarted empty rather than being brand-new.
	Live bool
}

func (q *Quarantine) Error() string {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	switch q.Why {
	case WhyNew:
		if q.Live {
			return fmt.Sprintf("quarantined: restarted empty at %s (no marker) while the other nodes serve locks, "+
				"votes at %s; wait: `redlock init` on a live set would let it grant a lock another owner holds",
				at(q.Since), at(q.Until))
		}
		return fmt.Sprintf("quarantined: new or restarted empty at %s (no marker), votes at %s; "+
			"a brand-new set of nodes that never held a lock votes at once after `redlock init`", at(q.Since), at(q.Until))
	case WhyRestarted:
		return fmt.Sprintf("quarantined: restarted at %s, and what it loaded (a snapshot, or an append-only file that "+
			"may have been switched off at run time) may lack leases it granted; votes again at %s", at(q.Since), at(q.Until))
	case WhyFlushed:
		return fmt.Sprintf("quarantined: lost its data, or had it replaced, at %s (FLUSHALL, FLUSHDB, SWAPDB, RESTORE, "+
			"DEBUG or an eviction since its marker counted them), votes again at %s", at(q.Since), at(q.Until))
	case WhyFailover:
		return fmt.Sprintf("quarantined: became a primary (REPLICAOF, FAILOVER, or CONFIG RESETSTAT hiding them) "+
			"since it started, seen at %s: it may lack writes its old primary acknowledged; votes again at %s",
			at(q.Since), at(q.Until))
	case WhyCluster:
		return fmt.Sprintf("quarantined: a Redis Cluster shard without its slot's marker at %s, whose slots may have come "+
			"from elsewhere since it started (CLUSTER ADDSLOTS or SETSLOT, a migration, a failover): votes again at %s; "+
			"a brand-new Cluster member votes at once after `redlock init`", at(q.Since), at(q.Until))
	case WhyUnknown:
		return fmt.Sprintf("quarantined: its marker was missing at %s and INFO is refused (ACL or rename), so it cannot "+
			"tell why; votes again at %s (allow INFO to the lock's user)", at(q.Since), at(q.Until))
	}
	return fmt.Sprintf("quarantined: lost its data (or is new) at %s, votes again at %s", at(q.Since), at(q.Until))
}

func (q *Quarantine) Is(target error) bool { return target == ErrQuarantined }

const quarantinePrefix = "QUARANTINED "

// quarantined turns the script error "QUARANTINED <since> <until> [why
// [left]]" into a *Quarantine; other errors pass unchanged.
func quarantined(err error) error {
	var redisErr redis.Error
	if errors.As(err, &redisErr) && strings.HasPrefix(redisErr.Error(), unguardedPrefix) {
		return unguarded(err, strings.Fields(strings.TrimPrefix(redisErr.Error(), unguardedPrefix)))
	}
	if !errors.As(err, &redisErr) || !strings.HasPrefix(redisErr.Error(), quarantinePrefix) {
		return err
	}
	fields := strings.Fields(strings.TrimPrefix(redisErr.Error(), quarantinePrefix))
	if len(fields) < 2 || len(fields) > 4 {
		return fmt.Errorf("%w: %v", ErrBadReply, err)
	}
	since, sinceErr := strconv.ParseInt(fields[0], 10, 64)
	until, untilErr := strconv.ParseInt(fields[1], 10, 64)
	q := &Quarantine{Since: time.UnixMilli(since), Until: time.UnixMilli(until), Why: WhyLost, Left: -1}
	if len(fields) > 2 {
		q.Why = fields[2]
	}
	leftErr := error(nil)
	if len(fields) > 3 {
		var left int64
		left, leftErr = strconv.ParseInt(fields[3], 10, 64)
		q.Left = max(time.Duration(left), 0) * time.Millisecond
		// left may exceed until - since: the node's clock stepped back.
		if left > int64(math.MaxInt64/time.Millisecond) {
			leftErr = strconv.ErrRange
		}
	}
	if sinceErr != nil || untilErr != nil || leftErr != nil || since <= 0 || until < since || !knownWhy(q.Why) {
		return fmt.Errorf("%w: %v", ErrBadReply, err)
	}
	return q
}

func unguarded(err error, fields []string) error {
	switch {
	case len(fields) == 1 && (fields[0] == "noinfo" || fields[0] == "replica"):
		return &Unguarded{Why: fields[0]}
	case len(fields) == 2 && fields[0] == "evicts":
		return &Unguarded{Why: "evicts", Policy: fields[1]}
	}
	return fmt.Errorf("%w: %v", ErrBadReply, err)
}

func knownWhy(why string) bool {
	switch why {
	case WhyNew, WhyRestarted, WhyFlushed, WhyFailover, WhyUnknown, WhyCluster, WhyLost:
		return true
	}
	return false
}

// markerKey is the marker a script of the lock at keys checks. On a Redis
// Cluster node a script may only touch keys of one slot, so there is one
// marker per slot there, named with a hash tag of the lock's slot.
func (n *Node) markerKey(keys Keys) string {
	return MarkerFor(n.client, keys.Marker, keys.Lock)
}

// MarkerFor is the marker that the scripts of the lock whose key is
// lockKey check on a node of client: marker itself, or on a Redis Cluster
// member the marker of the lock's slot. A database other than 0 names its
// own ("<marker>:db<n>"): SWAPDB then leaves each database without its
// marker, which the guard judges, instead of with another's, which it
// would trust (docs/restart-guard.md, rule 9).
func MarkerFor(client any, marker, lockKey string) string {
	switch c := client.(type) {
	case *redis.ClusterClient:
		return marker + ":{" + slotTag(slotOf(lockKey)) + "}"
	case *redis.Client:
		if db := c.Options().DB; db != 0 {
			return marker + ":db" + strconv.Itoa(db)
		}
	}
	return marker
}

// slotOf is the Redis Cluster slot of key (CRC16 of its hash tag).
func slotOf(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return crc16(key) % 16384
}

// crc16 is CRC-16/XMODEM, as Redis Cluster hashes keys.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var (
	slotTagsOnce sync.Once
	slotTags     [16384]string // slot → the first decimal string hashing to it
)

// slotTag is a short string whose hash tag puts a key in slot. The table
// is filled in one pass (about 160,000 hashes), as a declaration of a
// Cluster member needs every slot's.
func slotTag(slot uint16) string {
	slotTagsOnce.Do(func() {
		for i, left := 0, len(slotTags); left > 0; i++ {
			tag := strconv.Itoa(i)
			if s := crc16(tag) % 16384; slotTags[s] == "" {
				slotTags[s] = tag
				left--
			}
		}
	})
	return slotTags[slot%16384]
}
