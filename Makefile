# snapq — see README.md and docs/development.md. Every target installs/starts what it needs.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(shell PATH="$(PATH):/usr/local/go/bin" go env GOPATH 2>/dev/null)/bin
GO ?= go
TEST_TIMEOUT ?= 23m
# TEST_PARALLEL is how many t.Parallel tests of a package run at once: many e2e tests wait on
# leases, failovers, outages and their own processes' start, and four at a time keep 2 cores busy.
TEST_PARALLEL ?= 4
# TEST_PACKAGES is how many packages of the unit tier are built and tested at once (go test -p):
# most of its time is compiling, and its integration packages wait on services and Chromium.
TEST_PACKAGES ?= 4
# TEST_VET is go test's own vet pass: `make test` runs go vet ./... first (its vet tier), so its
# test tiers turn theirs off (-vet=off); `make unit` and `make e2e` alone keep it.
TEST_VET ?=
# FUZZTIME is how long `make fuzz` runs each fuzz target (a go test -fuzztime value).
FUZZTIME ?= 30s
# FUZZMINIMIZETIME bounds the minimizing of each new input; go test's default (60s) can spend a
# whole short run of FuzzConvert minimizing its first few inputs.
FUZZMINIMIZETIME ?= 5s
# v0.8.2 is the first staticcheck release that builds with and understands go1.26.
STATICCHECK_VERSION ?= v0.8.2

.PHONY: demo up down services build test unit e2e chaos fuzz bench bench-filters noise soak proofs vet lint fmt clean

## demo: start everything, capture a sample batch of local pages, print the results
demo: up
	$(GO) run ./scripts/demo

## up: start Postgres, Redis, MinIO (installing what is missing), then api + worker in the background
up: services build
	scripts/stack.sh up

## down: stop api + worker and the services this project started
down:
	-scripts/stack.sh down
	scripts/services.sh down

services:
	scripts/services.sh up

build:
	$(GO) build -o bin/api ./cmd/api
	$(GO) build -o bin/worker ./cmd/worker
	$(GO) build -o bin/fixtures ./cmd/fixtures
	$(GO) build -o bin/snapq ./cmd/snapq

## test: every test, in tiers, cheapest first: go vet, the unit and integration tests of every
## package but tests/e2e (make unit), then tests/e2e whole (make e2e and make chaos in one run, so
## the chaos tests' waits overlap the others' work); stops at the first tier that fails
test: services vet
	$(MAKE) --no-print-directory unit TEST_VET=-vet=off
	$(MAKE) --no-print-directory e2e E2E_RUN=. E2E_SKIP= TEST_VET=-vet=off

# The packages of the unit tier: every package but the end-to-end one.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/tests/e2e$$')
# E2E_RUN and E2E_SKIP select the tests of tests/e2e (go test -run / -skip).
E2E_RUN ?= .
E2E_SKIP ?= ^TestChaos
E2E_TIMEOUT ?= 45m

## unit: unit and integration tests of every package but tests/e2e (Postgres, Redis, MinIO and
## Chromium where a test needs them; each store test on a schema of its own, in parallel)
unit: services
	CI=$${CI:-true} $(GO) test $(TEST_VET) -count=1 -p $(TEST_PACKAGES) -timeout $(TEST_TIMEOUT) -parallel $(TEST_PARALLEL) $(UNIT_PKGS)

## e2e: the end-to-end tests (tests/e2e) against the built binaries, but the chaos tests
e2e: services
	CI=$${CI:-true} $(GO) test $(TEST_VET) -count=1 -timeout $(E2E_TIMEOUT) -parallel $(TEST_PARALLEL) \
		-run '$(E2E_RUN)' $(if $(E2E_SKIP),-skip '$(E2E_SKIP)') ./tests/e2e

## chaos: the chaos tests of tests/e2e alone (processes, services and storage broken mid-batch)
chaos: services
	$(MAKE) --no-print-directory e2e E2E_RUN='^TestChaos' E2E_SKIP=

## fuzz: each parser fuzz target for FUZZTIME (default 30s), one after another (no services needed);
## `make test` runs their seed corpora as ordinary tests
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseBatchRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./jobs
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeURL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./jobs
	$(GO) test -run '^$$' -fuzz '^FuzzParseSuite$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./regression
	$(GO) test -run '^$$' -fuzz '^FuzzSchedule$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./regression
	$(GO) test -run '^$$' -fuzz '^FuzzCut$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./capture/internal/pngcut
	$(GO) test -run '^$$' -fuzz '^FuzzConvert$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./capture/internal/markdown
	$(GO) test -run '^$$' -fuzz '^FuzzCapRunes$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./capture/internal/markdown
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./capture/internal/pdftext

## vet: go vet on every package (no services needed)
vet:
	$(GO) vet ./...

## lint: staticcheck on every package, installing it into GOPATH/bin when missing
lint:
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	staticcheck ./...

## bench: pages/s of snapq end to end against a bare go-rod floor, printed as a ratio
bench: services build
	$(GO) run ./bench $(BENCH_ARGS)

## bench-filters: filter-list matching per request (EasyList + EasyPrivacy + chat), p50/p99 in µs
bench-filters:
	$(GO) run ./bench -filters

## noise: the noise benchmark: a suite over a noisy fixture site (ads, widgets, timestamps, A/B, …) run
## 30 times with no real change and 10 with one, features off then on; false alarms and detection.
## NOISE_ARGS for more flags (-noise-pages 3 -noise-runs 6 -noise-changes 2 for a small one, -noise-learn=mask)
noise: services build
	$(GO) run ./bench -noise $(NOISE_ARGS)

## soak: SOAK_PAGES (default 2000) mixed pages through api + worker while 200 clients poll the API;
## samples the worker every 10 s and fails when memory, goroutines, files, Chromium processes or
## temp files do not return to baseline, the API errs, or a slow-header client holds it
SOAK_PAGES ?= 2000
soak: services build
	$(GO) run ./bench -soak -soak-pages $(SOAK_PAGES) $(SOAK_ARGS)

## proofs: the scale proofs at full scale (SNAPQ_PROOF_SCALE=full): a 50-page suite run 10 times,
## two 2,000-job batch pages, 300 pages on three workers with one killed, 200 pages on a Redis
## Cluster, 100-page Sentinel failovers, change groups of 30 pages x 2 viewports, a clock rule on 20 pages x 2 viewports;
## `make test` runs the same tests small
PROOFS_TIMEOUT ?= 45m
proofs: services
	CI=$${CI:-true} SNAPQ_PROOF_SCALE=full $(GO) test -count=1 -v -timeout $(PROOFS_TIMEOUT) \
		-run '^(TestStorageGrowsWithChange|TestDashboardThumbnailBytes|TestManyWorkersEachJobOnce|TestRedisCluster|TestChangeGroupsAndApprovalMemory|TestChangesExplainedByElements|TestRedisSentinelFailover|TestRedisSentinelMasterKilled)$$' ./tests/e2e

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
