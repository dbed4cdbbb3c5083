package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quorumlock/redlock"
)

// A URL naming a Sentinel master is dialled as go-redis's ParseFailoverURL
// reads it: a malformed one is ErrConfig, naming the node, never echoing the
// password. (topology/sentinel_test.go locks through real sentinels.)
func TestDial_badFailoverURL(t *testing.T) {
	good := "redis://127.0.0.1:1"
	for _, bad := range []string{
		"redis://:s3cret@127.0.0.1:1?master_name=",                 // no master
		"redis://:s3cret@127.0.0.1:1?master_name=m&addr=no-port",   // a second sentinel without a port
		"redis://:s3cret@127.0.0.1:1?master_name=m&pool=4",         // not an option
		"redis://:s3cret@127.0.0.1:1/zero?master_name=m",           // not a database
		"http://:s3cret@127.0.0.1:1?master_name=m",                 // not a scheme
		"redis://:s3cret@127.0.0.1:1?master_name=m&pool_size=four", // not a number
	} {
		c, err := redlock.Dial([]string{good, bad, good})
		if c != nil || !errors.Is(err, redlock.ErrConfig) || !strings.Contains(err.Error(), "node 1") {
			t.Errorf("Dial with %q: client %v, err %v; want ErrConfig naming node 1", bad, c, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Dial's error leaks the password: %v", err)
		}
	}
}

// A well-formed failover URL is no error even when no sentinel answers yet:
// like a node that is down, it is reported by the first Lock.
func TestDial_failoverURLWithoutSentinel(t *testing.T) {
	c, err := redlock.Dial([]string{"redis://127.0.0.1:1?master_name=m&addr=127.0.0.1:2&pool_size=2"})
	if err != nil {
		t.Fatalf("Dial with a failover URL = %v; want a Client", err)
	}
	if _, err := c.Mutex("x").TryLock(t.Context()); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Errorf("TryLock with no sentinel up = %v; want ErrNoQuorum", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
