package engine

import (
	"context"

	"github.com/quorumlock/redlock/reentrant"
)

// WithOwner implements redlock.WithOwner, which documents it.
func WithOwner(ctx context.Context, owner string) context.Context {
	return reentrant.WithOwner(ctx, owner)
}
