package core

import (
	"testing"
	"time"
)

func TestKeysFor_shareOneHashTag(t *testing.T) {
	k := KeysFor("redlock:", "orders/42", time.Second)
	for _, key := range []string{k.Lock, k.Fence, k.Queue, k.Alive, k.Channel} {
		if want := "redlock:{orders/42}"; len(key) < len(want) || key[:len(want)] != want {
			t.Fatalf("key %q does not start with %q", key, want)
		}
	}
}
