package redlock_test

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// A paused node receives the acquire on a connection the client then gives
// up on; Unlock's release cannot reach it. When the node resumes it runs the
// acquire: that grant must not stay for the TTL (30 s), with Dial's clients
// as with one's own.
func TestUnlock_lateGrantOnAPausedNode_releasedOnceItAnswers(t *testing.T) {
	for _, kind := range []string{"Dial", "New"} {
		t.Run(kind, func(t *testing.T) {
			cluster := redlocktest.Start(t, 3)
			ctx := testContext(t)
			opts := []redlock.Option{redlock.WithNodeTimeout(300 * time.Millisecond)}
			var c *redlock.Client
			var err error
			if kind == "Dial" {
				c, err = redlock.Dial(cluster.URLs(), opts...)
			} else {
				c, err = redlock.New(cluster.Clients(t), opts...)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			// A connection to every node is open: the acquire goes out on
			// it at once, and the paused node's kernel takes it in.
			mustUnlock(t, mustLock(t, ctx, c.Mutex("late")))
			paused := cluster.Servers[2]
			if err := paused.Pause(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = paused.Resume() })
			lease := mustLock(t, ctx, c.Mutex("late"))
			mustUnlock(t, lease)
			time.Sleep(time.Second) // every call to the paused node has given up
			if err := paused.Resume(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the late grant on the resumed node to be released", func() bool {
				return holderOn(t, cluster, 2, "late") == ""
			})
			// Still gone a moment later: the acquire did not land after
			// the release.
			time.Sleep(300 * time.Millisecond)
			if holderOn(t, cluster, 2, "late") != "" {
				t.Fatal("the late grant came back after its release")
			}
		})
	}
}
