//go:build topology

package topology_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietRedis drops go-redis's own log lines (dial failures while tests
// kill nodes on purpose); the library reports node faults through errors.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// redialPause is how long a go-redis pool's background redial (after a
// run of failed dials to a killed shard or master) sleeps between tries:
// it sees its pool closed only when it wakes.
const redialPause = time.Second

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	code := m.Run()
	if code == 0 {
		time.Sleep(redialPause + 100*time.Millisecond)
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
