# docs.mk — regenerate the documentation's figures and tables (included by
# the Makefile). `make docs` rewrites docs/experiments/img/*.png, the
# generated block of every docs/experiments/NAME.md, docs/validation.md
# and docs/cli.md; `make docs-check` fails when any of them is stale (the
# same check runs in `go test ./docs/gen/`).
docs:
	$(GO) run ./docs/gen

docs-check:
	$(GO) run ./docs/gen -check

.PHONY: docs docs-check
