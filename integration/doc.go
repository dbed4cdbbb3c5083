// Package integration runs the redlock library against five Redis nodes in
// Docker containers and takes them down in the ways real nodes go down:
// killed, stopped, frozen, cut off the network; and it slows single links
// in one direction (requests held, replies held, requests delayed) with an
// in-process proxy per Client in front of the nodes' published ports. Each
// fault hits a minority of the nodes while the contention workload runs
// with two or three Clients, fenced in every mode, and the safety checker
// must stay clean, no update may be lost, and every lock mode must grant
// again within two TTLs after the nodes are healed.
//
// It is a nested module so that Testcontainers and the Docker client stay
// out of the library's dependencies. Run it with
//
//	cd integration && go test -count=1 ./...
//
// It needs a Docker engine and builds the node image (redlock-redis:local,
// from the host's redis-server, no registry needed) with
// ../docker/build-image.sh; REDLOCK_REDIS_IMAGE picks another image.
// Without an engine the tests skip, unless CI=true or
// REDLOCK_REQUIRE_DOCKER=1, which make them fail instead.
//
// TESTCONTAINERS_RYUK_DISABLED is set to true unless already set:
// Testcontainers' reaper is an image pulled from a registry, and the tests
// remove their containers and network themselves. A run killed hard can
// leave them behind; they carry the label redlock.integration:
//
//	docker rm -f $(docker ps -aq --filter label=redlock.integration)
//	docker network prune -f --filter label=redlock.integration
//
// cmd/chaos is the long-running randomized version, with negative controls;
// with -topology replicated it runs on members that are each a master, a
// replica and a redis-sentinel, failed over among its faults.
package integration
