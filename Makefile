# The two commands a newcomer needs: `make demo` and `make test`.
# Neither installs anything: redis-server must be on PATH, and make test
# also needs spin and gcc for the model and PostgreSQL for examples/jobs
# (apt-get install -y redis-server spin gcc faketime postgresql); .ci/run
# installs them on a new machine.

GO ?= go
PKGS := ./...
# Builds that do not depend on the checkout's path: a fresh clone reuses
# the Go build cache of earlier runs instead of compiling the module's
# packages again (vet, race, fuzz, examples: about 25 s of wall time each
# time on a 2-core machine).
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

.PHONY: test race examples contrib demo bench vet fmt-check integration chaos chaos-failover compose-demo compose-clean model model-small model-verify fuzz topology valkey

## test: formatting, go vet, every test with the race detector on real
## redis-server nodes (scripts/race.sh), the examples, the contrib modules,
## a short fuzz run of the reply decoders, and the small tier of the model
## check (every negative variant, each property on smaller
## configurations). The fuzz run and the model's small tier run beside the
## race tests at idle priority (scripts/test.sh). Each phase prints its
## time ("== phase race: 236s"), and the total at the end. On a 2-core
## machine, in a fresh clone with the Go build cache of earlier runs: 4 to
## 5 minutes and about 1.1 GB of memory at the peak; with an empty cache, which builds
## the standard library and the dependencies three ways (plain, -race,
## fuzzing), about 9 minutes. Tests that need redis-server skip without
## it, unless REDLOCK_REQUIRE_REDIS=1. The full model check is `make model`.
test:
	@GO="$(GO)" MAKE="$(MAKE)" bash scripts/test.sh

## race: every package's tests with -race: chaos/ alone (it checks that
## locking makes progress under faults, and another package's race tests
## at the same time starve it on 2 cores), then the root package's tests
## in RACE_SHARDS processes (default 3; they mostly wait on timers) while
## the other packages run two at a time. See scripts/race.sh.
RACE_SHARDS ?= 3
race:
	GO="$(GO)" RACE_SHARDS="$(RACE_SHARDS)" bash scripts/race.sh

## contrib: the supported modules beside the library (contrib/otel,
## contrib/prometheus), each its own module, vetted and tested with -race.
contrib:
	@for d in contrib/*/; do \
		echo "== contrib $$d"; \
		(cd $$d && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || exit 1; \
	done

## examples: the examples module (examples/), vetted and tested.
examples:
	cd examples && $(GO) vet ./... && $(GO) test -count=1 ./...

## fuzz: every decoder of a node's script replies, fed any reply shape, for
## FUZZTIME executions (default 200000x, about 20 s with its build;
## FUZZTIME=50000000x for a longer run). A count, not a duration: Go 1.26's
## fuzz coordinator can fail a run that ends at a time limit with "context
## deadline exceeded" and no failing input (Go issue 75804, fixed in Go 1.27).
FUZZTIME ?= 200000x
fuzz:
	@echo "== fuzz the reply decoders for $(FUZZTIME)"
	$(GO) test -run '^$$' -fuzz FuzzDecoders -fuzztime $(FUZZTIME) ./node

## model: the Promela models of the protocol, checked with Spin in their
## full configurations: every property must hold, and every negative
## variant must yield a counterexample. 20 to 55 minutes and up to 9.4 GB
## of memory on a 2-core machine (one check at a time; the largest take
## 9 GB each). A run that passes writes model/verified: commit it with
## the models. .ci/run runs it when make model-verify says the record is
## not current.
model:
	@echo "== model: spin, full tier (model/README.md)"
	bash model/check.sh full

## model-verify: whether model/verified, the record a passing `make model`
## writes, is current: exit 0 (and the record printed) when its key equals
## the digest of the models, check.sh and the spin and gcc versions now;
## 1 (naming what differs) when not; 2 when there is no record. .ci/run
## runs the full tier only when this is not 0 (model/README.md).
model-verify:
	@bash model/record.sh verify

## model-small: the same checks in their small configurations (part of
## make test): every negative variant still yields its counterexample,
## every property still holds; under a minute and under 1 GB.
model-small:
	bash model/check.sh small

## demo: five local redis-server nodes, contending clients, a reentrant hold,
## a minority of nodes killed while locks keep working; ends with `violations: 0`.
demo:
	$(GO) run ./cmd/redlock demo

## bench: lock+unlock latency at N=1,3,5, then the contended handoff and idle
## waiter comparison with go-redsync/redsync (bench/, a nested module), each
## summarized by benchstat over COUNT runs (default 5).
COUNT ?= 5
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count $(COUNT) . | tee bench.out
	$(GO) run golang.org/x/perf/cmd/benchstat@latest bench.out
	COUNT=$(COUNT) ./bench/run.sh

## topology: the slower suites of the deployments users run (topology/,
## build tag topology): members that are 3-shard Redis Clusters, members
## that are a master with replicas failed over by redis-sentinel. Needs
## redis-server and redis-sentinel; .ci/run runs it after make test.
topology:
	$(GO) test -tags topology -count=1 -timeout 20m ./topology/...

## valkey: the Redis-backed suites again, on valkey-server instead of
## redis-server (scripts/valkey.sh); .ci/run runs it after make test.
valkey:
	GO="$(GO)" bash scripts/valkey.sh

## integration: the Docker-backed suite (integration/, a nested module): five Redis
## containers, each fault on a minority while two Clients contend. Skips without
## Docker unless CI=true or REDLOCK_REQUIRE_DOCKER=1.
integration:
	./docker/build-image.sh
	cd integration && $(GO) vet ./... && $(GO) test -count=1 ./...

## chaos: DURATION of seeded random safe faults on five Redis containers, a recovery
## check, then the negative controls; ends with one "chaos: ..." summary line.
## SEED=N replays a fault schedule.
DURATION ?= 60s
chaos:
	./docker/build-image.sh
	cd integration && $(GO) run ./cmd/chaos -duration $(DURATION) $(if $(SEED),-seed $(SEED))

## chaos-failover: the chaos run on a replicated topology: each member a
## master, a replica and a sentinel, in containers, with failovers among
## the faults; then its negative control (restart guard off).
chaos-failover:
	./docker/build-image.sh
	cd integration && $(GO) run ./cmd/chaos -topology replicated -duration $(DURATION) $(if $(SEED),-seed $(SEED))

## compose-demo: the demo inside Docker against docker-compose.yml's five nodes.
## The images are kept for the next run (rebuilt only when their inputs
## change); compose-clean removes the containers, network and both images.
compose-demo:
	@echo "== building the node and demo images (cached after the first run)"
	./docker/build-image.sh
	./docker/build-demo-image.sh
	docker-compose --profile demo run --rm demo; s=$$?; docker-compose --profile demo down; exit $$s

compose-clean:
	docker-compose --profile demo down
	@for image in redlock-demo:local redlock-redis:local; do \
		if docker image inspect $$image >/dev/null 2>&1; then docker image rm $$image; else echo "$$image: not there"; fi; \
	done

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags topology ./topology/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
