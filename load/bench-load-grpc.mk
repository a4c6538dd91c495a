# bench-load-grpc: the gRPC half of make bench-load (included by the Makefile).
#
# Starts a trivial loopback gRPC target (load/internal/grpcecho: by default
# the lean HTTP/2 server of load/internal/healthecho, a fraction of grpc-go's
# CPU per call; BENCH_LOAD_GRPC_SERVER=grpc answers with grpc-go's health
# service and reflection instead, to compare), drives grpc.health.v1.Health/Check with
# `stormsim load --target grpc://...` at each rate for
# BENCH_LOAD_DURATION (with its lean gRPC client and, in
# BENCH_LOAD_GRPC_CLIENTS, with grpc-go's: net), then with ghz v0.93.0 at the
# same rates (`go install` into the benchmark's directory, for the comparison
# only; it is not a dependency of stormsim), and prints for each run the
# offered rate, late/unsent requests (stormsim), success share, p99 and, where
# GNU time is installed, the generator's CPU time per request and the
# target's (from /proc: both share the machine's cores, so the two say which
# one bounds the rate), and the highest clean rate of each (offered within
# 1 %, at least 99 % OK) and their ratio. Rates above one at which every
# generator was dirty are skipped. ghz runs with --async (open loop) and one
# connection, as stormsim's one multiplexed connection per target.
# Everything listens on and sends to 127.0.0.1 only. The target listens on a
# port the kernel picks (BENCH_LOAD_GRPC_LISTEN) and writes it to a file;
# nothing is timed until `grpcecho -wait` has read it and the target answered
# a health check, so the benchmark can never drive another program's server.

BENCH_LOAD_GRPC_RATES   ?= 1000 2000 4000 8000 16000 24000 32000 40000 48000 56000 64000 72000 80000 96000
# lean: the driver's own gRPC client (the default); net: grpc-go's
# (--http-client net).
BENCH_LOAD_GRPC_CLIENTS ?= lean
BENCH_LOAD_GRPC_LISTEN  ?= 127.0.0.1:0
# lean: healthecho's server (ghz reads the health service's descriptors from a
# protoset file, as it has no reflection); grpc: grpc-go's server.
BENCH_LOAD_GRPC_SERVER  ?= lean
GHZ                     ?= github.com/bojand/ghz/cmd/ghz@v0.93.0

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
	$(BENCH_LOAD_TMP)/grpcecho -protoset $(BENCH_LOAD_TMP)/health.protoset; \
	$(BENCH_LOAD_TMP)/grpcecho -listen $(BENCH_LOAD_GRPC_LISTEN) -addr-file $(BENCH_LOAD_TMP)/grpcecho.addr -server $(BENCH_LOAD_GRPC_SERVER) > $(BENCH_LOAD_TMP)/grpcecho.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	addr=$$($(BENCH_LOAD_TMP)/grpcecho -wait $(BENCH_LOAD_TMP)/grpcecho.addr) || { cat $(BENCH_LOAD_TMP)/grpcecho.log; exit 1; }; \
	echo "target: grpc://$$addr (grpcecho -server $(BENCH_LOAD_GRPC_SERVER), pid $$pid)"; \
	best_s=0; best_n=0; best_g=0; cputime=; \
	if /usr/bin/time -f '%U %S' -o /dev/null true 2>/dev/null; then cputime=yes; fi; \
	timed() { f=$$1; shift; if [ -n "$$cputime" ]; then /usr/bin/time -f '%U %S' -o "$$f" "$$@"; else "$$@"; fi; }; \
	tck=$$(getconf CLK_TCK); \
	ticks() { awk '{ print $$14 + $$15 }' /proc/$$pid/stat; }; \
	tcpu() { awk -v a=$$1 -v b=$$(ticks) -v t=$$tck 'BEGIN { printf "%.2f 0\n", (b - a) / t }' > $$2; }; \
	for r in $(BENCH_LOAD_GRPC_RATES); do \
	  clean=; \
	  for c in $(BENCH_LOAD_GRPC_CLIENTS); do \
	    cpu=$(BENCH_LOAD_TMP)/cpu-stormsim-grpc-$$c-$$r.txt; tc=$(BENCH_LOAD_TMP)/cpu-grpcecho-$$c-$$r.txt; t0=$$(ticks); \
	    timed $$cpu $(BENCH_LOAD_TMP)/stormsim load --target grpc://$$addr/grpc.health.v1.Health/Check --rate $$r --http-client $$c \
	      --policy $(BENCH_LOAD_TMP)/policy.yaml --duration $(BENCH_LOAD_DURATION) --workers 256 --format json > $(BENCH_LOAD_TMP)/stormsim-grpc-$$c-$$r.json; \
	    tcpu $$t0 $$tc; \
	    line=$$($(BENCH_LOAD_TMP)/benchsummary stormsim $(BENCH_LOAD_TMP)/stormsim-grpc-$$c-$$r.json $${cputime:+$$cpu $$tc}); \
	    printf 'stormsim/%-4s grpc rate=%-6s %s\n' $$c $$r "$$line"; \
	    case "$$line" in *CLEAN) clean=yes; if [ "$$c" = lean ]; then best_s=$$r; else best_n=$$r; fi;; esac; \
	  done; \
	  cpu=$(BENCH_LOAD_TMP)/cpu-ghz-$$r.txt; tc=$(BENCH_LOAD_TMP)/cpu-grpcecho-ghz-$$r.txt; t0=$$(ticks); \
	  timed $$cpu $(BENCH_LOAD_TMP)/ghz --insecure --async --protoset $(BENCH_LOAD_TMP)/health.protoset --call grpc.health.v1.Health.Check -d '{}' --rps $$r -z $(BENCH_LOAD_DURATION) \
	    --concurrency 256 --connections 1 -O json $$addr > $(BENCH_LOAD_TMP)/ghz-$$r.json || true; \
	  tcpu $$t0 $$tc; \
	  line=$$($(BENCH_LOAD_TMP)/benchsummary ghz $(BENCH_LOAD_TMP)/ghz-$$r.json $$r $${cputime:+$$cpu $$tc}); \
	  printf 'ghz                rate=%-6s %s\n' $$r "$$line"; \
	  case "$$line" in *CLEAN) clean=yes; best_g=$$r;; esac; \
	  [ -n "$$clean" ] || break; \
	done; \
	echo "highest clean gRPC rate (offered within 1%, >= 99% ok): stormsim $$best_s/s (lean client, with a retry policy), ghz $$best_g/s"; \
	case " $(BENCH_LOAD_GRPC_CLIENTS) " in *" net "*) echo "  stormsim with grpc-go's client (net): $$best_n/s";; esac; \
	if [ "$$best_g" -gt 0 ]; then awk -v s=$$best_s -v g=$$best_g 'BEGIN { printf "ratio stormsim/ghz: %.2f\n", s / g }'; fi; \
	printf 'load average: '; cut -d' ' -f1-3 /proc/loadavg
