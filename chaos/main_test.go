package chaos

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietRedis drops go-redis's log lines ("connection reset", "i/o
// timeout"): the faults are injected on purpose, and the library reports
// them through its errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	goleak.VerifyTestMain(m)
}
