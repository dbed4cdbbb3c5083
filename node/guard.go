package node

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/guard.lua
var guardSource string

// ErrQuarantined marks a node that lost its data (a restart without
// persistence, FLUSHALL, a failover to an empty replica) or is new, less
// than the restart guard ago: it does not vote (see scripts/guard.lua).
var ErrQuarantined = errors.New("quarantined")

// Quarantine is a node's refusal to vote; it matches ErrQuarantined.
type Quarantine struct {
	Since time.Time // when the node found its data missing (its clock)
	Until time.Time // when it votes again (its clock)
}

func (q *Quarantine) Error() string {
	return fmt.Sprintf("quarantined: lost its data (or is new) at %s, votes again at %s",
		q.Since.UTC().Format(time.RFC3339Nano), q.Until.UTC().Format(time.RFC3339Nano))
}

func (q *Quarantine) Is(target error) bool { return target == ErrQuarantined }

const quarantinePrefix = "QUARANTINED "

// quarantined turns the script error "QUARANTINED <since> <until>" into a
// *Quarantine; other errors pass unchanged.
func quarantined(err error) error {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) || !strings.HasPrefix(redisErr.Error(), quarantinePrefix) {
		return err
	}
	fields := strings.Fields(strings.TrimPrefix(redisErr.Error(), quarantinePrefix))
	if len(fields) == 2 {
		since, sinceErr := strconv.ParseInt(fields[0], 10, 64)
		until, untilErr := strconv.ParseInt(fields[1], 10, 64)
		if sinceErr == nil && untilErr == nil && since > 0 && until >= since {
			return &Quarantine{Since: time.UnixMilli(since), Until: time.UnixMilli(until)}
		}
	}
	return fmt.Errorf("%w: %v", ErrBadReply, err)
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
