# The two commands a newcomer needs: `make demo` and `make test`.
# Neither installs anything: redis-server must be on PATH
# (apt-get install -y redis-server); .ci/run installs it on a new machine.

GO ?= go
PKGS := ./...

.PHONY: test demo bench vet fmt-check integration chaos compose-demo

## test: formatting, go vet, then every test with the race detector.
## Tests that need redis-server skip without it, unless REDLOCK_REQUIRE_REDIS=1.
test: fmt-check vet
	$(GO) test -race -count=1 $(PKGS)
	cd examples && $(GO) vet ./... && $(GO) test -count=1 ./...

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

## compose-demo: the demo inside Docker against docker-compose.yml's five nodes.
compose-demo:
	./docker/build-image.sh
	./docker/build-demo-image.sh
	docker-compose --profile demo run --rm demo; s=$$?; docker-compose --profile demo down; exit $$s

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
