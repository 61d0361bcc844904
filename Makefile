# Shortcuts; each target says what it runs. scripts/ holds the real commands.
GO ?= go

.PHONY: test race demo bench fuzz lint vulncheck

test:           ## the whole suite, as CI runs it (installs redis-server if needed)
	bash scripts/test

race: test      ## the suite always runs with -race

demo:           ## the demo on an embedded Redis; REDIS=redis://... for a real one
	$(GO) run ./cmd/dlock demo $(if $(REDIS),--redis $(REDIS))

bench:          ## benchmarks against the raw floor, compared with benchstat
	bash scripts/bench

fuzz:           ## each fuzz test for FUZZTIME (default 30s)
	$(GO) test -run '^$$' -fuzz '^FuzzObtain$$' -fuzztime $(or $(FUZZTIME),30s) .
	$(GO) test -run '^$$' -fuzz '^FuzzSideKey$$' -fuzztime $(or $(FUZZTIME),30s) .
	$(GO) test -run '^$$' -fuzz '^FuzzLockKeyOf$$' -fuzztime $(or $(FUZZTIME),30s) .
	$(GO) test -run '^$$' -fuzz '^FuzzSharedHold$$' -fuzztime $(or $(FUZZTIME),30s) .
	$(GO) test -run '^$$' -fuzz '^FuzzSplitValue$$' -fuzztime $(or $(FUZZTIME),30s) ./internal/engine
	$(GO) test -run '^$$' -fuzz '^FuzzSKUKeys$$' -fuzztime $(or $(FUZZTIME),30s) ./stock
	$(GO) test -run '^$$' -fuzz '^FuzzReserve$$' -fuzztime $(or $(FUZZTIME),30s) ./stock

lint:           ## golangci-lint with .golangci.yml, on every module
	for m in . bench faults fence gocron prometheus otel cmd/dlock scripts/modproxy; do \
		(cd $$m && $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...) || exit 1; \
	done

vulncheck:      ## known vulnerabilities in the code and its dependencies (needs internet access)
	for m in . cmd/dlock; do \
		(cd $$m && $(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...) || exit 1; \
	done
