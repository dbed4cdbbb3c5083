package node

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"
)

var (
	//go:embed scripts/leader.lua
	leaderSource string
	//go:embed scripts/leader_read.lua
	leaderReadSource string

	leaderScript     = newScript(leaderSource)
	leaderReadScript = newScript(leaderReadSource)
)

// Record is an election's published leader: its term, its owner's
// fingerprint and its value. Term 0: none published.
type Record struct {
	Term  uint64
	Owner string
	Value string
}

// Publish stores r at key unless a record of a later term is there, and
// answers the stored term. A record of r's term is kept for at least life
// from now (its life is never shortened).
func (n *Node) Publish(ctx context.Context, key string, r Record, life time.Duration) (uint64, error) {
	reply, err := n.run(ctx, leaderScript, ClockCheck{}, []string{key},
		strconv.FormatUint(r.Term, 10), r.Owner, r.Value, milliseconds(max(life, time.Millisecond))).Result()
	if err != nil {
		return 0, conflicting(err, key)
	}
	return decodeRaised(reply, r.Term)
}

// Published reads the record at key (Term 0 when there is none).
func (n *Node) Published(ctx context.Context, key string) (Record, error) {
	reply, err := n.run(ctx, leaderReadScript, ClockCheck{}, []string{key}).Result()
	if err != nil {
		return Record{}, conflicting(err, key)
	}
	return decodeRecord(reply)
}

func decodeRecord(result any) (Record, error) {
	reply, _ := result.([]any)
	if len(reply) == 3 && reply[0] == nil && reply[1] == nil && reply[2] == nil {
		return Record{}, nil
	}
	if len(reply) == 3 {
		term, termErr := decimal(reply[0], MaxToken)
		owner, ownerOK := reply[1].(string)
		value, valueOK := reply[2].(string)
		if termErr == nil && term > 0 && ownerOK && len(owner) == fingerprintLen && valueOK {
			return Record{Term: term, Owner: owner, Value: value}, nil
		}
	}
	return Record{}, fmt.Errorf("%w for the leader record: %v", ErrBadReply, reply)
}
