package node

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrKeyConflict marks a node's answer that a key of the lock holds
// something else: a value of another type (WRONGTYPE), or a hash that is
// not a lock. The lock cannot be taken on that node until the key is
// removed or the prefix changed: trying again does not help. The node
// answered, so Answered counts it.
var ErrKeyConflict = errors.New("a key of the lock holds something else")

// conflicting turns a script error about a key of the wrong kind into an
// ErrKeyConflict naming the keys the script used (Redis does not say
// which one); other errors pass unchanged.
func conflicting(err error, keys ...string) error {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		return err
	}
	switch message := redisErr.Error(); {
	case strings.Contains(message, "WRONGTYPE"):
		return fmt.Errorf("%w: one of the keys %s holds a value of another type (WRONGTYPE)", ErrKeyConflict, strings.Join(keys, ", "))
	case strings.Contains(message, "is a hash that is not a lock"):
		return fmt.Errorf("%w: %s is a hash that is not a lock", ErrKeyConflict, keys[0])
	}
	return err
}
