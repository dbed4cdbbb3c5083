// Package nodes runs independent Redis nodes in Docker containers, on a
// private network of their own, and injects faults into them: kill,
// graceful stop, pause and network disconnect, each healed on demand. The
// integration tests and the chaos runner share it, so both exercise the
// library through the same faults.
//
// The library reaches the nodes through ports published on 127.0.0.1 and
// chosen up front, so that a node keeps its address across stop and start
// (Docker picks a new ephemeral port on every start otherwise). A paused
// node then makes calls time out, a stopped or disconnected one refuses
// connections: both are what a client sees of a dead or cut-off node.
//
// Replicated is the other topology: members that are each a master, a
// replica and a redis-sentinel, with faults of their own (a failover by a
// kill or by SENTINEL FAILOVER, the replica's replication link cut so
// that it misses writes, and the rest), for cmd/chaos -topology replicated.
package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

const (
	// DefaultImage is the image docker/build-image.sh builds from the host's
	// redis-server: no registry is needed.
	DefaultImage = "redlock-redis:local"
	// ImageEnv names another image to use instead (e.g. redis:7, where a
	// registry can be reached).
	ImageEnv = "REDLOCK_REDIS_IMAGE"
	// Label marks every container and network this package creates, so
	// that leftovers of a run killed hard can be found:
	//	docker rm -f $(docker ps -aq --filter label=redlock.integration)
	//	docker network prune -f --filter label=redlock.integration
	Label = "redlock.integration"
	// fastClockPreload is the shim in DefaultImage that speeds up a node's
	// wall clock (docker/redis/fastclock.c; libfaketime hangs this
	// jemalloc-linked redis-server).
	fastClockPreload = "/usr/lib/redlock/fastclock.so"
)

// FastClock returns the environment that makes a node's wall clock run
// rate times as fast as real time, so that it expires keys rate times too
// early: a clock running fast beyond any drift factor.
func FastClock(rate int) map[string]string {
	return map[string]string{"LD_PRELOAD": fastClockPreload, "FASTCLOCK_RATE": fmt.Sprint(rate)}
}

// Image is the node image: $REDLOCK_REDIS_IMAGE, or DefaultImage.
func Image() string {
	if image := os.Getenv(ImageEnv); image != "" {
		return image
	}
	return DefaultImage
}

// DisableRyuk turns off Testcontainers' reaper unless the environment
// already decides: the reaper is an image pulled from a registry, which
// these machines do not have, and every container here is removed by
// Cluster.Close anyway (and carries Label for a run killed hard).
func DisableRyuk() {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// Ping reports whether a Docker engine answers; its error wraps
// ErrNoDocker, so that callers can tell a missing engine from a broken setup.
func Ping(ctx context.Context) error {
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		defer docker.Close()
		_, err = docker.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoDocker, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// HasImage reports whether image exists locally, with how to build it if not.
func HasImage(ctx context.Context, image string) error {
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer docker.Close()
	if _, err := docker.ImageInspect(ctx, image); err != nil {
		how := "build it with docker/build-image.sh"
		if image != DefaultImage {
			how = "docker pull " + image
		}
		return fmt.Errorf("image %s not found (%s): %w", image, how, err)
	}
	return nil
}

// BuildImage runs script (docker/build-image.sh), which builds DefaultImage
// when it is missing or stale and does nothing for another $REDLOCK_REDIS_IMAGE.
func BuildImage(ctx context.Context, script string) error {
	out, err := exec.CommandContext(ctx, "bash", script).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ErrNoDocker is wrapped by Ping's and Require's errors when no engine answers.
var ErrNoDocker = errors.New("no Docker engine reachable")

// Require checks that Docker answers and the node image exists.
func Require(ctx context.Context) error {
	if err := Ping(ctx); err != nil {
		return err
	}
	return HasImage(ctx, Image())
}
