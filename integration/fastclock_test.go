package integration

import (
	"context"
	"testing"

	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// The chaos runner's second negative control gives a majority of nodes a
// clock ten times too fast. That proves nothing unless the clock really
// runs fast in the container, and libfaketime, the usual tool, hangs
// Debian's jemalloc-linked redis-server; so check the image's shim does it.
func TestFastClock_expiresKeysEarly(t *testing.T) {
	requireDocker(t)
	if nodes.Image() != nodes.DefaultImage {
		t.Skipf("%s=%s: the fast clock shim is only in %s", nodes.ImageEnv, nodes.Image(), nodes.DefaultImage)
	}
	cl, err := nodes.Start(t.Context(), nodes.Config{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := cl.Recreate(t.Context(), 0, nodes.FastClock(10)); err != nil {
		t.Fatal(err)
	}
	if err := cl.CheckFastClock(t.Context(), 0, 1); err != nil {
		t.Fatal(err)
	}
}
