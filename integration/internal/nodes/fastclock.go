package nodes

import (
	"context"
	"fmt"
	"time"
)

// CheckFastClock shows that node fast expires keys early and node normal
// does not: a key set to live 1s on both must be gone from fast, and still
// on normal, 300ms later. A fast-clock control proves nothing unless the
// clock really runs fast inside the container.
func (c *Cluster) CheckFastClock(ctx context.Context, fast, normal int) error {
	const key = "redlock-integration:clock-probe"
	fastClient, normalClient := c.Client(fast), c.Client(normal)
	defer fastClient.Close()
	defer normalClient.Close()
	if err := fastClient.Set(ctx, key, "x", time.Second).Err(); err != nil {
		return fmt.Errorf("node %d: %w", fast, err)
	}
	if err := normalClient.Set(ctx, key, "x", time.Second).Err(); err != nil {
		return fmt.Errorf("node %d: %w", normal, err)
	}
	time.Sleep(300 * time.Millisecond)
	onFast, err := fastClient.Exists(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("node %d: %w", fast, err)
	}
	onNormal, err := normalClient.Exists(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("node %d: %w", normal, err)
	}
	if onFast != 0 || onNormal != 1 {
		return fmt.Errorf("a 1s key after 300ms: %d on the fast node %d (want 0), %d on node %d (want 1): the clock is not fast",
			onFast, fast, onNormal, normal)
	}
	_ = normalClient.Del(ctx, key).Err()
	return nil
}
