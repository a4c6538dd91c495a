# stormsim — common tasks. Only Go is needed; `make test` is what CI runs.
GO      ?= go
BIN     := bin/stormsim
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test test-short test-postgres bench demo lint fmt vet docs clean proxy-tools test-proxies

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/stormsim

# The full suite, including the long statistical and experiment tests.
# Four packages at a time, not GOMAXPROCS: a third of the suite's packages
# (load, proxies, audit, live) mostly wait on real servers and timers, so
# they overlap those that compute. Likewise the tests marked parallel wait
# on real time (servers, ack deadlines, timeouts): four at a time.
test:
	$(GO) test -count=1 -p 4 -parallel 4 -timeout 15m ./...

# The orders example's tests against PostgreSQL as well as SQLite: a
# throwaway cluster on a free loopback port, removed afterwards (installs
# Debian's postgresql when missing and run as root).
test-postgres:
	examples/orders/with-postgres.sh $(GO) test -count=1 ./examples/orders/... ./audit/...

# A quick subset for the edit-compile loop.
test-short:
	$(GO) test -short ./...

# Benchmarks: engine vs a hand-specialized floor (in process, and
# `stormsim run` against the floor as whole processes), policies.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./sim/ ./sim/internal/floor/ ./policies/ ./dist/ ./idempotency/
	$(GO) test -run '^$$' -bench MM1Process -benchtime 6x ./cmd/stormsim/

# Run the canned retry-storm experiment and print its summary, then the same
# storm under its cures, side by side.
demo: build
	./$(BIN) run experiments/retry-storm.yaml
	@echo
	./$(BIN) compare experiments/retry-storm.yaml

# nginx and HAProxy from Debian's packages, for the differential tests of
# the proxy presets (load/proxies); then run them.
proxy-tools:
	command -v nginx >/dev/null && command -v haproxy >/dev/null || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nginx haproxy)

test-proxies: proxy-tools
	$(GO) test -count=1 ./load/proxies/

lint: vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

include docs/docs.mk
include load/soak.mk
include load/bench-load.mk
include load/bench-load-grpc.mk
