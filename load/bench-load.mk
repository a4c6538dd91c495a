# bench-load: the load driver's rate benchmark (included by the Makefile).
#
# Starts a trivial loopback target (load/internal/echo, answering with the
# lean HTTP/1.1 server of load/internal/httpecho; BENCH_LOAD_SERVER=net
# answers with net/http's server instead), drives it with
# `stormsim load` at 1k–60k req/s for BENCH_LOAD_DURATION each (with its lean
# HTTP/1.1 client and with net/http's), then with
# vegeta v12.13.0 at the same rates (`go run` from the module proxy, for the
# comparison only; it is not a dependency of stormsim), and prints for each
# run the offered rate, late/unsent requests (stormsim), p99 and, where GNU
# time is installed, the generator's CPU time per request (user + system:
# the budget when it shares the cores with its target). Finally the
# in-process Go benchmarks report rate error, p99, peak heap, allocations and
# CPU per request.
# Everything listens on and sends to 127.0.0.1 only. The target listens on a
# port the kernel picks (BENCH_LOAD_LISTEN) and writes it to a file; nothing
# is timed until `echo -wait` has read it and the target answered as echo
# does, so the benchmark can never drive another program's server.

BENCH_LOAD_RATES    ?= 1000 2000 4000 8000 16000 20000 24000 32000 40000 60000
# lean: the driver's own HTTP/1.1 client (the default); net: net/http's.
BENCH_LOAD_CLIENTS  ?= lean net
BENCH_LOAD_DURATION ?= 5s
BENCH_LOAD_LISTEN   ?= 127.0.0.1:0
# lean: httpecho's server, a fraction of net/http's CPU per request (the
# target shares the cores with the generator); net: net/http's.
BENCH_LOAD_SERVER   ?= lean
BENCH_LOAD_TMP      ?= $(or $(TMPDIR),/tmp)/stormsim-bench-load
VEGETA              ?= github.com/tsenart/vegeta/v12@v12.13.0

.PHONY: bench-load bench-load-http
# The HTTP half, then the gRPC half (bench-load-grpc.mk), one after the
# other even under make -j: two generators sharing the cores would measure
# each other.
bench-load:
	@$(MAKE) --no-print-directory bench-load-http
	@$(MAKE) --no-print-directory bench-load-grpc

bench-load-http:
	@mkdir -p $(BENCH_LOAD_TMP)
	go build -o $(BENCH_LOAD_TMP)/echo ./load/internal/echo
	go build -o $(BENCH_LOAD_TMP)/stormsim ./cmd/stormsim
	GOBIN=$(BENCH_LOAD_TMP) go install $(VEGETA)
	@printf 'timeout: 1s\nretry: {max_attempts: 3, on: [unavailable, timeout, error], backoff: {initial: 10ms, jitter: full}}\n' > $(BENCH_LOAD_TMP)/policy.yaml
	@set -e; \
	rm -f $(BENCH_LOAD_TMP)/echo.addr; \
	$(BENCH_LOAD_TMP)/echo -listen $(BENCH_LOAD_LISTEN) -addr-file $(BENCH_LOAD_TMP)/echo.addr -server $(BENCH_LOAD_SERVER) > $(BENCH_LOAD_TMP)/echo.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	addr=$$($(BENCH_LOAD_TMP)/echo -wait $(BENCH_LOAD_TMP)/echo.addr) || { cat $(BENCH_LOAD_TMP)/echo.log; exit 1; }; \
	echo "target: http://$$addr/ (echo, pid $$pid)"; \
	go build -o $(BENCH_LOAD_TMP)/benchsummary ./load/internal/benchsummary; \
	best_s=0; best_v=0; next_s=; next_v=; cputime=; \
	if /usr/bin/time -f '%U %S' -o /dev/null true 2>/dev/null; then cputime=yes; fi; \
	timed() { f=$$1; shift; if [ -n "$$cputime" ]; then /usr/bin/time -f '%U %S' -o "$$f" "$$@"; else "$$@"; fi; }; \
	for r in $(BENCH_LOAD_RATES); do \
	  for c in $(BENCH_LOAD_CLIENTS); do \
	  cpu=$(BENCH_LOAD_TMP)/cpu-stormsim-$$c-$$r.txt; \
	  timed $$cpu $(BENCH_LOAD_TMP)/stormsim load --target http://$$addr/ --rate $$r --policy $(BENCH_LOAD_TMP)/policy.yaml \
	    --duration $(BENCH_LOAD_DURATION) --workers 256 --http-client $$c --format json > $(BENCH_LOAD_TMP)/stormsim-$$c-$$r.json; \
	  line=$$($(BENCH_LOAD_TMP)/benchsummary stormsim $(BENCH_LOAD_TMP)/stormsim-$$c-$$r.json $${cputime:+$$cpu}); \
	  printf 'stormsim/%-4s rate=%-6s %s\n' $$c $$r "$$line"; \
	  if [ "$$c" = lean ]; then case "$$line" in *CLEAN) best_s=$$r; next_s=;; *) [ -n "$$next_s" ] || next_s=$$r;; esac; fi; \
	  done; \
	  cpu=$(BENCH_LOAD_TMP)/cpu-vegeta-$$r.txt; \
	  echo "GET http://$$addr/" | timed $$cpu $(BENCH_LOAD_TMP)/vegeta attack -rate=$$r -duration=$(BENCH_LOAD_DURATION) \
	    | $(BENCH_LOAD_TMP)/vegeta report -type=json > $(BENCH_LOAD_TMP)/vegeta-$$r.json; \
	  line=$$($(BENCH_LOAD_TMP)/benchsummary vegeta $(BENCH_LOAD_TMP)/vegeta-$$r.json $$r $${cputime:+$$cpu}); \
	  printf 'vegeta        rate=%-6s %s\n' $$r "$$line"; \
	  case "$$line" in *CLEAN) best_v=$$r; next_v=;; *) [ -n "$$next_v" ] || next_v=$$r;; esac; \
	done; \
	echo "highest clean rate (offered within 1%, >= 99% ok): stormsim (lean client) $$best_s/s (with a retry policy), vegeta $$best_v/s"; \
	if [ "$$best_v" -gt 0 ]; then awk -v s=$$best_s -v v=$$best_v -v ns="$$next_s" -v nv="$$next_v" 'BEGIN { \
	  lo = (nv != "") ? sprintf("above %.2f", s / nv) : ""; hi = (ns != "") ? sprintf("below %.2f", ns / v) : ""; \
	  b = (lo != "" && hi != "") ? lo " and " hi : lo hi; \
	  if (b == "") b = "unbounded by the rates tried (both clean at the highest)"; \
	  printf "ratio stormsim/vegeta: %.2f at the rates tried; the true ratio is %s (a highest clean rate lies below the next rate tried)\n", s / v, b }'; fi
	go test -run '^$$' -bench OfferedRate -benchtime 1x ./load/driver/
	go test -run '^$$' -bench DriverRequest -benchtime 20000x ./load/driver/
