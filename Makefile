# The two commands a newcomer needs: `make demo` and `make test`.
# Neither installs anything: redis-server must be on PATH
# (apt-get install -y redis-server); .ci/run installs it on a new machine.

GO ?= go
PKGS := ./...

.PHONY: test demo bench vet fmt-check

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

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
