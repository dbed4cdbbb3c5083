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
		{int64(1), int64(2)},
		{int64(0)},
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
