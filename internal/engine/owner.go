package engine

import (
	"context"

	"github.com/quorumlock/redlock/reentrant"
)

// WithOwner returns a copy of ctx that makes owner the owner of the locks
// taken with it. A Lock with a ctx whose owner already holds the lock
// re-enters it (the hold count lives in Redis), so an explicit owner
// re-enters across goroutines, Clients and processes. Choose owners that no
// one else can guess or reuse by accident, e.g. a request id prefixed with
// the service's name. An empty owner makes Lock return ErrConfig.
func WithOwner(ctx context.Context, owner string) context.Context {
	return reentrant.WithOwner(ctx, owner)
}
