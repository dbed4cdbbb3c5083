package node

import (
	"errors"
	"testing"
	"time"
)

func TestDecodeAcquired_rejectsWrongShapes(t *testing.T) {
	bad := [][]any{
		nil,
		{},
		{int64(1)},
		{int64(1), int64(0)},
		{int64(0)},
		{int64(4)},
		{int64(0), int64(-3), "abc"},
		{int64(2), int64(1), int64(1)},
		{"1", int64(1), int64(0)},
		{int64(1), "x", int64(0)},
		{int64(0), int64(1), int64(2)},
		{int64(0), int64(1)},
		{int64(0), int64(1), ""},
		{int64(1), int64(1), "abc"},
		{"0", int64(1), "abc"},
	}
	for _, reply := range bad {
		if _, err := decodeAcquired(reply); !errors.Is(err, ErrBadReply) {
			t.Fatalf("decodeAcquired(%v) = %v, want ErrBadReply", reply, err)
		}
	}
	if got, err := decodeAcquired([]any{int64(2)}); err != nil || got.Granted || !got.Revoked {
		t.Fatalf("revoked hold = %+v, %v", got, err)
	}
	if got, err := decodeAcquired([]any{int64(3)}); !errors.Is(err, ErrLate) || got.Granted || !Answered(err) {
		t.Fatalf("late request = %+v, %v, want ErrLate, answered", got, err)
	}
	if _, err := decodeRenewed([]any{int64(1), int64(-3)}, 2); !errors.Is(err, ErrLate) {
		t.Fatalf("late renewal = %v, want ErrLate", err)
	}
	good, err := decodeAcquired([]any{int64(0), int64(-1), "f00d"})
	if err != nil || good.Granted || good.PTTL != -1 || good.Holder != "f00d" {
		t.Fatalf("refusal without expiry = %+v, %v", good, err)
	}
}

func TestMilliseconds_roundsUp(t *testing.T) {
	tests := map[string]string{"1ns": "1", "1ms": "1", "1.5ms": "2", "30s": "30000"}
	for in, want := range tests {
		d, _ := time.ParseDuration(in)
		if got := milliseconds(d); got != want {
			t.Fatalf("milliseconds(%s) = %s, want %s", in, got, want)
		}
	}
}

// An empty array used to be indexed before its length was checked.
func TestDecodeReleasedFair_emptyReplyIsAnError(t *testing.T) {
	for _, reply := range []any{[]any{}, []any{int64(2)}, []any{"2", "x"}, []any{int64(1), "x"}} {
		if _, _, err := decodeReleasedTo(reply); !errors.Is(err, ErrBadReply) {
			t.Fatalf("decodeReleasedTo(%#v) = %v, want ErrBadReply", reply, err)
		}
	}
}

func TestDecodeFence(t *testing.T) {
	got, err := decodeFence([]any{"41", "1795317275", "550414"})
	if err != nil || got.Counter != 41 || got.Clock.UnixMicro() != 1795317275550414 {
		t.Fatalf("decodeFence = %+v, %v", got, err)
	}
	for _, bad := range []any{
		[]any{"-1", "1", "1"}, []any{"041", "1", "1"}, []any{"x", "1", "1"},
		[]any{"1", "1", "1000000"}, []any{"18446744073709551615", "1", "1"}, []any{"1", "1"},
	} {
		if _, err := decodeFence(bad); !errors.Is(err, ErrBadReply) {
			t.Fatalf("decodeFence(%#v) = %v, want ErrBadReply", bad, err)
		}
	}
	if _, err := decodeRaised("6", 7); !errors.Is(err, ErrBadReply) {
		t.Fatalf("a counter below the token raised to it must be an error, got %v", err)
	}
}

func TestDecodeAcquired_fencedGrant(t *testing.T) {
	got, err := decodeAcquired([]any{int64(1), int64(2), "41", "1795317275", "550414"})
	if err != nil || !got.Granted || got.Holds != 2 || got.Fence == nil ||
		got.Fence.Counter != 41 || got.Fence.Clock.UnixMicro() != 1795317275550414 {
		t.Fatalf("decodeAcquired = %+v, %v", got, err)
	}
	if got, err := decodeAcquired([]any{int64(1), int64(1)}); err != nil || got.Fence != nil {
		t.Fatalf("a grant without a fence = %+v, %v", got, err)
	}
	for _, bad := range []any{
		[]any{int64(0), int64(2), "41", "1795317275", "550414"}, []any{int64(1), int64(0), "41", "1", "1"},
		[]any{int64(1), int64(1), "041", "1", "1"}, []any{int64(1), int64(1), "18446744073709551615", "1", "1"},
		[]any{int64(1), int64(1), "1", "1", "1000000"}, []any{int64(1), int64(1), nil, nil, nil},
	} {
		if _, err := decodeAcquired(bad); !errors.Is(err, ErrBadReply) {
			t.Fatalf("decodeAcquired(%#v) = %v, want ErrBadReply", bad, err)
		}
	}
}

func TestDecodeRaisedHeld(t *testing.T) {
	if value, held, err := decodeRaisedHeld([]any{int64(1), "9"}, 7); err != nil || !held || value != 9 {
		t.Fatalf("accepted = %d, %t, %v", value, held, err)
	}
	if value, held, err := decodeRaisedHeld([]any{int64(0)}, 7); err != nil || held || value != 0 {
		t.Fatalf("refused = %d, %t, %v", value, held, err)
	}
	for _, bad := range []any{
		[]any{int64(1), "6"}, []any{int64(1)}, []any{int64(0), "7"}, []any{int64(2)}, "7", int64(0), nil, []any{},
	} {
		if _, _, err := decodeRaisedHeld(bad, 7); !errors.Is(err, ErrBadReply) {
			t.Fatalf("decodeRaisedHeld(%#v) = %v, want ErrBadReply", bad, err)
		}
	}
}
