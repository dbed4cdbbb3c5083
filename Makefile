# The two commands a newcomer needs: `make demo` and `make test`.
# Neither installs anything: redis-server must be on PATH, and make test
# also needs spin and gcc for the model (apt-get install -y redis-server
# spin gcc faketime); .ci/run installs them on a new machine.

GO ?= go
PKGS := ./...

.PHONY: test demo bench vet fmt-check integration chaos compose-demo compose-clean model fuzz

## test: formatting, go vet, every test with the race detector, the
## examples, a short fuzz run of the reply decoders, and the model check.
## Tests that need redis-server skip without it, unless REDLOCK_REQUIRE_REDIS=1.
## Packages run one at a time (-p 1): the fault tier (chaos/) also checks
## that locking makes progress under faults, and on a 2-core machine two
## packages' race-instrumented tests at once starve it.
test: fmt-check vet
	@echo "== go test -race -p 1 ./... (real redis-server nodes, one package at a time; about 3 minutes)"
	$(GO) test -race -count=1 -p 1 $(PKGS)
	@echo "== examples"
	cd examples && $(GO) vet ./... && $(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory model

## fuzz: every decoder of a node's script replies, fed any reply shape, for
## FUZZTIME executions (default 200000x, about 10 s; FUZZTIME=50000000x for a
## longer run). A count, not a duration: Go 1.26's fuzz coordinator can fail a
## run that ends at a time limit with "context deadline exceeded" and no
## failing input (Go issue 75804, fixed in Go 1.27).
FUZZTIME ?= 200000x
fuzz:
	@echo "== fuzz the reply decoders for $(FUZZTIME)"
	$(GO) test -run '^$$' -fuzz FuzzDecoders -fuzztime $(FUZZTIME) ./node

## model: the Promela model of the protocol, checked with Spin: every
## property must hold, and every negative variant must yield a counterexample.
model:
	@echo "== model: spin (model/README.md)"
	bash model/check.sh

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

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
