package node

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/guard.lua
var guardSource string

// ErrQuarantined marks a node that may have forgotten a lease (it
// restarted without persisting every write, lost its data, or is new) less
// than the restart guard ago: it does not vote (see scripts/guard.lua).
var ErrQuarantined = errors.New("quarantined")

// Why a node is quarantined: the rule of scripts/guard.lua that applied.
const (
	WhyNew       = "new"       // no marker; the process started at Since and dropped nothing since
	WhyRestarted = "restarted" // marker kept, but restarted at Since without an append-only file
	WhyFlushed   = "flushed"   // no marker after a flush, swap, eviction, DEBUG, REPLICAOF or CONFIG RESETSTAT
	WhyUnknown   = "unknown"   // no marker, and INFO is refused (ACL or rename): cannot tell
	WhyCluster   = "cluster"   // a Redis Cluster node without its slot's marker: the slot may have moved
	WhyLost      = "lost"      // a marker made by an older version
)

// Quarantine is a node's refusal to vote; it matches ErrQuarantined.
type Quarantine struct {
	Since time.Time // when the node started, or found its data missing (its clock)
	Until time.Time // when it votes again (its clock)
	Why   string    // one of the Why constants
	// Left is how long from the reply until the node votes again, as the
	// node measured it; -1 when the reply did not say.
	Left time.Duration
}

func (q *Quarantine) Error() string {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	switch q.Why {
	case WhyNew:
		return fmt.Sprintf("quarantined: new or restarted empty at %s (no marker), votes at %s; "+
			"a brand-new node that never held a lock votes at once after `redlock init`", at(q.Since), at(q.Until))
	case WhyRestarted:
		return fmt.Sprintf("quarantined: restarted at %s without an append-only file, it may have forgotten leases; "+
			"votes again at %s (appendonly yes, appendfsync always: votes at once after a restart)", at(q.Since), at(q.Until))
	case WhyFlushed:
		return fmt.Sprintf("quarantined: lost its data at %s (FLUSHALL, FLUSHDB, SWAPDB, eviction, DEBUG, REPLICAOF "+
			"or CONFIG RESETSTAT since it started), votes again at %s", at(q.Since), at(q.Until))
	case WhyCluster:
		return fmt.Sprintf("quarantined: a Redis Cluster node without its slot's marker at %s (the slot's data may have "+
			"moved or failed over), votes again at %s", at(q.Since), at(q.Until))
	case WhyUnknown:
		return fmt.Sprintf("quarantined: its marker was missing at %s and INFO is refused (ACL or rename), so it cannot "+
			"tell why; votes again at %s (allow INFO and LASTSAVE to the lock's user)", at(q.Since), at(q.Until))
	}
	return fmt.Sprintf("quarantined: lost its data (or is new) at %s, votes again at %s", at(q.Since), at(q.Until))
}

func (q *Quarantine) Is(target error) bool { return target == ErrQuarantined }

const quarantinePrefix = "QUARANTINED "

// quarantined turns the script error "QUARANTINED <since> <until> [why
// [left]]" into a *Quarantine; other errors pass unchanged.
func quarantined(err error) error {
	var redisErr redis.Error
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

func knownWhy(why string) bool {
	switch why {
	case WhyNew, WhyRestarted, WhyFlushed, WhyUnknown, WhyCluster, WhyLost:
		return true
	}
	return false
}

// markerKey is the marker a script of the lock at keys checks. On a Redis
// Cluster node a script may only touch keys of one slot, so there is one
// marker per slot there, named with a hash tag of the lock's slot.
func (n *Node) markerKey(keys Keys) string {
	if !n.cluster {
		return keys.Marker
	}
	return keys.Marker + ":{" + slotTag(slotOf(keys.Lock)) + "}"
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

var slotTags sync.Map // slot → the shortest decimal string hashing to it

// slotTag is a short string whose hash tag puts a key in slot.
func slotTag(slot uint16) string {
	if tag, ok := slotTags.Load(slot); ok {
		return tag.(string)
	}
	for i := 0; ; i++ {
		tag := strconv.Itoa(i)
		if crc16(tag)%16384 == slot {
			slotTags.Store(slot, tag)
			return tag
		}
	}
}
