# make soak: serve + load in one process for 60 s, printing RSS, goroutines
# and open descriptors every 5 s and failing if any of them trends upward
# over the last 40 s, or if anything is left running afterwards. Not part of
# make test (it takes a minute by design). STORMSIM_SOAK_RATE sets the
# offered rate (default 150 req/s, which two shared cores hold).
.PHONY: soak
soak:
	STORMSIM_SOAK=1 $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 5m ./cmd/stormsim/
