package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// RequireDockerEnv set to 1 (or CI=true) turns "no Docker engine" from a
// skip into a failure, so that a green CI run means the tests really ran.
const RequireDockerEnv = "REDLOCK_REQUIRE_DOCKER"

// setupErr is why the tests cannot run (no engine, image build failed), or nil.
var setupErr error

// shared is the five-node cluster the fault tests share: every test heals
// what it broke, and starting five containers per test would cost more
// than the tests themselves.
var shared struct {
	once    sync.Once
	cluster *nodes.Cluster
	err     error
}

func TestMain(m *testing.M) {
	nodes.DisableRyuk()
	harness.Quiet()
	setupErr = setup()
	code := m.Run()
	if shared.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := shared.cluster.Close(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "integration: remove the cluster: %v\n", err)
			code = 1
		}
		cancel()
	}
	os.Exit(code)
}

// setup checks for a Docker engine and builds the node image (a no-op when
// it is up to date).
func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := nodes.Ping(ctx); err != nil {
		return err
	}
	if err := nodes.BuildImage(ctx, "../docker/build-image.sh"); err != nil {
		return err
	}
	return nodes.HasImage(ctx, nodes.Image())
}

// requireDocker skips the test when no Docker engine answers (fails it with
// CI=true or REDLOCK_REQUIRE_DOCKER=1), and fails it when the engine is
// there but the image could not be built.
func requireDocker(t *testing.T) {
	t.Helper()
	if setupErr == nil {
		return
	}
	required := os.Getenv("CI") == "true" || os.Getenv(RequireDockerEnv) == "1"
	if errors.Is(setupErr, nodes.ErrNoDocker) && !required {
		t.Skipf("%v (set %s=1 or CI=true to fail instead of skip)", setupErr, RequireDockerEnv)
	}
	t.Fatalf("integration setup: %v", setupErr)
}

// cluster returns the shared five-node cluster, started on first use.
func cluster(t *testing.T) *nodes.Cluster {
	t.Helper()
	requireDocker(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		shared.cluster, shared.err = nodes.Start(ctx, nodes.Config{Nodes: 5})
		t.Logf("five nodes started in %v", time.Since(start).Round(time.Millisecond))
	})
	if shared.err != nil {
		t.Fatalf("start the nodes: %v", shared.err)
	}
	return shared.cluster
}
