package redlock_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietRedis drops go-redis's own log lines ("failed to dial" while tests
// kill nodes on purpose); the library reports node faults through errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	if urls := os.Getenv("REDLOCK_FAIR_WAITER"); urls != "" {
		runFairWaiter(urls) // a child process of TestFair_killedWaiter...
	}
	redis.SetLogger(quietRedis{})
	// Examples need real nodes and cannot skip themselves: without
	// redis-server they are skipped here, loudly, unless Redis is required.
	if _, err := redisproc.LookPath(""); err != nil && os.Getenv(redlocktest.RequireRedisEnv) != "1" {
		flag.Parse()
		skip := "^Example"
		if current := flag.Lookup("test.skip").Value.String(); current != "" {
			skip = current + "|" + skip
		}
		_ = flag.Set("test.skip", skip)
		fmt.Fprintf(os.Stderr, "redlock: %v; skipping the examples\n", err)
	}
	goleak.VerifyTestMain(m)
}
