package node

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Every decoder of a script reply, fed any reply shape: a decoded value or
// an error matching ErrBadReply (or ErrLate, the answer of a request that
// arrived after its deadline), never a panic.
//
// Short run (part of make test): go test -run '^$' -fuzz FuzzDecoders -fuzztime 200000x ./node
// Longer: the same with -fuzztime 50000000x. Counts, not durations: with
// Go 1.26 a run that ends at a time limit can fail with "context deadline
// exceeded" and no failing input (Go issue 75804).
func FuzzDecoders(f *testing.F) {
	for _, reply := range realReplies {
		f.Add(encodeReply(nil, reply))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, _ := decodeFuzz(data, 0)
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, ErrBadReply) && !errors.Is(err, ErrLate) {
				t.Fatalf("%s(%#v): error %v does not match ErrBadReply", what, reply, err)
			}
		}
		acquired, err := decodeAcquired(reply)
		check("decodeAcquired", err)
		if err == nil && acquired.Granted && acquired.Holds < 1 {
			t.Fatalf("decodeAcquired(%#v) granted with %d holds", reply, acquired.Holds)
		}
		_, err = decodeReleased(reply)
		check("decodeReleased", err)
		released, head, err := decodeReleasedTo(reply)
		check("decodeReleasedTo", err)
		if err == nil && head != "" && released != LockDeleted {
			t.Fatalf("decodeReleasedTo(%#v) named a head without deleting", reply)
		}
		for items := range 4 {
			renewed, err := decodeRenewed(reply, items)
			check("decodeRenewed", err)
			if err == nil && len(renewed) != items {
				t.Fatalf("decodeRenewed(%#v, %d) = %d items", reply, items, len(renewed))
			}
		}
		check("decodeLeft", decodeLeft(reply))
		if at, longest, inner, err := untime(reply); err == nil {
			items := reply.([]any)
			if at.IsZero() || longest < 0 || len(inner) != len(items)-3 || !reflect.DeepEqual(inner, items[:len(items)-3]) {
				t.Fatalf("untime(%#v) = %v, %#v", reply, at, inner)
			}
		} else {
			check("untime", err)
		}
		_, err = decodeFence(reply)
		check("decodeFence", err)
		for _, token := range []uint64{0, 7, MaxToken} {
			value, err := decodeRaised(reply, token)
			check("decodeRaised", err)
			if err == nil && value < token {
				t.Fatalf("decodeRaised(%#v, %d) = %d, below the token", reply, token, value)
			}
		}
		if err == nil && acquired.Fence != nil && (!acquired.Granted || acquired.Fence.Counter > MaxToken) {
			t.Fatalf("decodeAcquired(%#v) = %+v: a fence without a grant, or above MaxToken", reply, acquired)
		}
		for _, token := range []uint64{0, 7, MaxToken} {
			value, held, err := decodeRaisedHeld(reply, token)
			check("decodeRaisedHeld", err)
			if err == nil && ((held && value < token) || (!held && value != 0)) {
				t.Fatalf("decodeRaisedHeld(%#v, %d) = %d, %t", reply, token, value, held)
			}
		}
		view, err := decodeView(reply)
		check("decodeView", err)
		if err == nil && view.Holder == "" && (view.Holds != 0 || view.Handed) {
			t.Fatalf("decodeView(%#v) = %+v: holds without a holder", reply, view)
		}
		forced, err := decodeForced(reply)
		check("decodeForced", err)
		if err == nil && forced.Removed < 0 {
			t.Fatalf("decodeForced(%#v) removed %d holds", reply, forced.Removed)
		}
		record, err := decodeRecord(reply)
		check("decodeRecord", err)
		if err == nil && record.Term == 0 && (record.Owner != "" || record.Value != "") {
			t.Fatalf("decodeRecord(%#v) = %+v: a record without a term", reply, record)
		}
		permits, err := decodePermits(reply)
		check("decodePermits", err)
		if err == nil && (permits < 1 || permits > MaxPermits) {
			t.Fatalf("decodePermits(%#v) = %d", reply, permits)
		}
		if text, ok := reply.(string); ok {
			checkQuarantine(t, text)
		}
	})
}

// scriptError is an error reply, as go-redis hands it over.
type scriptError string

func (e scriptError) Error() string { return string(e) }
func (scriptError) RedisError()     {}

// checkQuarantine decodes the guard's refusal with text after its prefix:
// a *Quarantine whose times are in order, or an error matching ErrBadReply.
func checkQuarantine(t *testing.T, text string) {
	err := quarantined(scriptError(quarantinePrefix + text))
	var q *Quarantine
	switch {
	case errors.As(err, &q):
		if q.Until.Before(q.Since) || q.Left < -1 || !knownWhy(q.Why) || q.Error() == "" {
			t.Fatalf("quarantined(%q) = %+v", text, q)
		}
	case !errors.Is(err, ErrBadReply):
		t.Fatalf("quarantined(%q) = %v; want a *Quarantine or ErrBadReply", text, err)
	}
}

// realReplies are what the scripts answer (copied from real nodes).
var realReplies = []any{
	[]any{int64(1), int64(1)},
	[]any{int64(1), int64(3)},
	[]any{int64(0), int64(29875), "3f2a9c0d1e4b5a67"},
	[]any{int64(0), int64(-1), "3f2a9c0d1e4b5a67"},
	[]any{int64(0), int64(-2), "3f2a9c0d1e4b5a67"},
	[]any{int64(2)},
	int64(2), int64(1), int64(0), int64(-1),
	[]any{int64(2), "3f2a9c0d1e4b5a67"},
	[]any{int64(2), ""},
	[]any{int64(1), int64(0), int64(-2)},
	[]any{"0", "1795317275", "550414"},
	"3",
	[]any{"12", "3f2a9c0d1e4b5a67", "worker-1"},
	[]any{nil, nil, nil},
	[]any{int64(1), int64(1), "1795317275", "550414"},
	[]any{int64(1), int64(1), "41", "1795317275", "550414"},
	[]any{int64(1), int64(2), "0", "1795317275", "550414"},
	[]any{int64(1), "1795317275550415"}, []any{int64(0)},
	[]any{"1795317275", "550414"},
	[]any{"1795317275550415", "1795317275", "999999"},
	"1795317275550415", "7",
	[]any{"3f2a9c0d1e4b5a67", int64(2), int64(0), int64(29875), int64(3), "1795317275550415"},
	[]any{"", int64(0), int64(0), int64(-2), int64(0), "0"},
	[]any{int64(1), "3f2a9c0d1e4b5a67", "1795317275550415"},
	[]any{int64(0), "", "0"},
	nil, []any{}, "",
	"1795317275550 1795317305550 new 29000", "1795317275550 1795317305550 restarted 12",
	"1795317275550 1795317305550",
}

// The reply encoding of the fuzz input: a tag byte, then the value.
const (
	tagInt = iota
	tagSmallInt
	tagString
	tagArray
	tagNil
	tagCount
)

func decodeFuzz(data []byte, depth int) (any, []byte) {
	if len(data) == 0 {
		return nil, nil
	}
	tag, data := data[0]%tagCount, data[1:]
	switch tag {
	case tagInt:
		var buf [8]byte
		n := copy(buf[:], data)
		return int64(binary.LittleEndian.Uint64(buf[:])), data[n:]
	case tagSmallInt:
		if len(data) == 0 {
			return int64(0), nil
		}
		return int64(int8(data[0])), data[1:]
	case tagString:
		if len(data) == 0 {
			return "", nil
		}
		n := min(int(data[0]), len(data)-1)
		return string(data[1 : 1+n]), data[1+n:]
	case tagArray:
		if len(data) == 0 || depth > 3 {
			return []any{}, nil
		}
		n := int(data[0] % 8) // up to 7 items: the longest reply has 6
		data = data[1:]
		items := make([]any, 0, n)
		for range n {
			var item any
			item, data = decodeFuzz(data, depth+1)
			items = append(items, item)
		}
		return items, data
	}
	return nil, data
}

func encodeReply(out []byte, reply any) []byte {
	switch value := reply.(type) {
	case int64:
		if value >= -128 && value <= 127 {
			return append(out, tagSmallInt, byte(int8(value)))
		}
		return binary.LittleEndian.AppendUint64(append(out, tagInt), uint64(value))
	case string:
		return append(append(out, tagString, byte(len(value))), value...)
	case []any:
		out = append(out, tagArray, byte(len(value)))
		for _, item := range value {
			out = encodeReply(out, item)
		}
		return out
	}
	return append(out, tagNil)
}

// The fuzz encoding carries the real replies whole, so the seed corpus is
// what the nodes really say.
func TestEncodeReply_roundTrips(t *testing.T) {
	for _, reply := range realReplies {
		got, rest := decodeFuzz(encodeReply(nil, reply), 0)
		if len(rest) != 0 || !equalReply(got, reply) {
			t.Fatalf("round trip of %#v = %#v (rest %v)", reply, got, rest)
		}
	}
}

func equalReply(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok != bok {
		return false
	}
	if !aok {
		return a == b
	}
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if !equalReply(as[i], bs[i]) {
			return false
		}
	}
	return true
}

// ParseNotice reads any payload without panicking, and a notice it reads
// as naming a hold is the one the scripts publish: "<id> <who> <hold>",
// which it gives back field by field.
func FuzzParseNotice(f *testing.F) {
	for _, payload := range []string{"", "id", "id ", "id who", "id who hold", "id  hold", "a b c d", "h " + Fingerprint("b") + " b-1"} {
		f.Add(payload)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		n := ParseNotice(payload)
		if n.Hold != "" && n.ID+" "+n.Who+" "+n.Hold != payload {
			t.Fatalf("ParseNotice(%q) = %+v: the fields do not make the payload", payload, n)
		}
		if strings.Contains(n.ID, " ") || strings.Contains(n.Who, " ") {
			t.Fatalf("ParseNotice(%q) = %+v: a space inside the id or the fingerprint", payload, n)
		}
	})
}
