# bench-load-grpc: the gRPC half of make bench-load (included by the Makefile).
#
# Starts a trivial loopback gRPC target (load/internal/grpcecho: the health
# service and reflection), drives grpc.health.v1.Health/Check with
# `stormsim load --target grpc://...` at each rate for
# BENCH_LOAD_DURATION, then with ghz v0.93.0 at the same rates (`go install`
# into the benchmark's directory, for the comparison only; it is not a
# dependency of stormsim), and prints for each run the offered rate,
# late/unsent requests (stormsim), success share and p99, and the highest
# clean rate of each (offered within 1 %, at least 99 % OK). ghz runs with
# --async (open loop) and one connection, as stormsim's one multiplexed
# connection per target. Everything listens on and sends to 127.0.0.1 only.
# The target listens on a port the kernel picks (BENCH_LOAD_GRPC_LISTEN) and
# writes it to a file; nothing is timed until `grpcecho -wait` has read it
# and the target answered a health check, so the benchmark can never drive
# another program's server.

BENCH_LOAD_GRPC_RATES ?= 1000 2000 4000 8000 12000 16000
BENCH_LOAD_GRPC_LISTEN ?= 127.0.0.1:0
GHZ                   ?= github.com/bojand/ghz/cmd/ghz@v0.93.0

.PHONY: bench-load-grpc
bench-load-grpc:
	@mkdir -p $(BENCH_LOAD_TMP)
	go build -o $(BENCH_LOAD_TMP)/grpcecho ./load/internal/grpcecho
	go build -o $(BENCH_LOAD_TMP)/stormsim ./cmd/stormsim
	go build -o $(BENCH_LOAD_TMP)/benchsummary ./load/internal/benchsummary
	GOBIN=$(BENCH_LOAD_TMP) go install $(GHZ)
	@printf 'timeout: 1s\nretry: {max_attempts: 3, on: [unavailable, timeout, error], backoff: {initial: 10ms, jitter: full}}\n' > $(BENCH_LOAD_TMP)/policy.yaml
	@set -e; \
	rm -f $(BENCH_LOAD_TMP)/grpcecho.addr; \
	$(BENCH_LOAD_TMP)/grpcecho -listen $(BENCH_LOAD_GRPC_LISTEN) -addr-file $(BENCH_LOAD_TMP)/grpcecho.addr > $(BENCH_LOAD_TMP)/grpcecho.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	addr=$$($(BENCH_LOAD_TMP)/grpcecho -wait $(BENCH_LOAD_TMP)/grpcecho.addr) || { cat $(BENCH_LOAD_TMP)/grpcecho.log; exit 1; }; \
	echo "target: grpc://$$addr (grpcecho, pid $$pid)"; \
	best_s=0; best_g=0; \
	for r in $(BENCH_LOAD_GRPC_RATES); do \
	  $(BENCH_LOAD_TMP)/stormsim load --target grpc://$$addr/grpc.health.v1.Health/Check --rate $$r \
	    --policy $(BENCH_LOAD_TMP)/policy.yaml --duration $(BENCH_LOAD_DURATION) --workers 256 --format json > $(BENCH_LOAD_TMP)/stormsim-grpc-$$r.json; \
	  line=$$($(BENCH_LOAD_TMP)/benchsummary stormsim $(BENCH_LOAD_TMP)/stormsim-grpc-$$r.json); \
	  printf 'stormsim grpc rate=%-6s %s\n' $$r "$$line"; \
	  case "$$line" in *CLEAN) best_s=$$r;; esac; \
	  $(BENCH_LOAD_TMP)/ghz --insecure --async --call grpc.health.v1.Health.Check -d '{}' --rps $$r -z $(BENCH_LOAD_DURATION) \
	    --concurrency 256 --connections 1 -O json $$addr > $(BENCH_LOAD_TMP)/ghz-$$r.json || true; \
	  line=$$($(BENCH_LOAD_TMP)/benchsummary ghz $(BENCH_LOAD_TMP)/ghz-$$r.json $$r); \
	  printf 'ghz           rate=%-6s %s\n' $$r "$$line"; \
	  case "$$line" in *CLEAN) best_g=$$r;; esac; \
	done; \
	echo "highest clean gRPC rate (offered within 1%, >= 99% ok): stormsim $$best_s/s (with a retry policy), ghz $$best_g/s"; \
	if [ "$$best_g" -gt 0 ]; then awk -v s=$$best_s -v g=$$best_g 'BEGIN { printf "ratio stormsim/ghz: %.2f\n", s / g }'; fi
