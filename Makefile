# apprun — `make run` starts a dev node, `make test` runs the whole suite.
GO ?= go
BIN := bin/apprun

.PHONY: run build test bench chaos sim fuzz docs-check walk client-check clean

build:
	$(GO) build -ldflags "-X main.commit=$$(git rev-parse --short HEAD 2>/dev/null)" -o $(BIN) ./cmd/apprun

# Dev node: embedded NATS + bbolt under $(APPRUN_DATA) (./data), HTTP on
# $(APPRUN_ADDR) (127.0.0.1:8080). Every APPRUN_* variable is honoured.
run: build
	./$(BIN) serve --dev

# stripe-mock (Stripe's own mock of its API, a Go module) serves the
# billing tests; it is installed in bin/ first. The process tests
# (cmd/apprun, bench) run bin/apprun-test, built once here
# (APPRUN_TEST_BINARY). go vet runs with -race, the tests' build: it then
# compiles what the tests run, once, and the contract report links
# against that build too. Every fuzz
# target's seed corpus runs with the tests; make fuzz fuzzes (a fuzzing
# build instruments every package again, about 80 s a target here).
STRIPE_MOCK := github.com/stripe/stripe-mock@v0.203.0

# go test starts packages in the order named: the longest first, so that
# none of them is left to run alone at the end (web, the longest, is last
# alphabetically and ran its last 200 s beside nothing). Three at a time:
# the process tests (cmd/apprun, bench) and the browser tests mostly wait
# on child processes, so two left a core idle beside them.
SLOW_FIRST := ./web ./httpapi ./cmd/apprun ./apps ./bench ./audit ./node ./billing
TEST_P ?= 3

test:
	@start=$$(date +%s); phase() { echo "make test: $$1 at $$(( $$(date +%s) - start )) s"; }; \
	GOBIN=$(CURDIR)/bin $(GO) install $(STRIPE_MOCK) && \
	$(GO) build -o bin/apprun-test ./cmd/apprun && phase "built" && \
	$(GO) vet -race ./... && phase "vetted" && \
	rm -rf .contract-report && \
	APPRUN_TEST_BINARY=$(CURDIR)/bin/apprun-test APPRUN_CONTRACT_REPORT=$(CURDIR)/.contract-report \
		$(GO) test -race -vet=off -count=1 -p $(TEST_P) -timeout 15m $(SLOW_FIRST) ./... && phase "tested" && \
	$(GO) run -race ./httpapi/contract/report .contract-report && \
	SEEDS=2000 $(GO) test ./sim -run '^TestSimulation$$' -count=1 -v -timeout 5m && \
	echo "make test: passed in $$(( $$(date +%s) - start )) s"

# apprun tried with clients not written here, from the npm registry and
# the Go module proxy: redocly lint, openapi-typescript + tsc, webhooks
# verified by standardwebhooks, the MCP TypeScript SDK, and six SSE
# clients and an oapi-codegen client through a proxy that cuts the stream
# (tools/clientcheck/run; .ci/run calls it).
client-check: build
	tools/clientcheck/run

# The load tool: all five scenarios against servers it starts itself
# (BENCHMARKS.md). The JSON report is bench.json (not committed).
bench: build
	./$(BIN) bench --json bench.json

# The fault test at full strength: 25 SIGKILLs of a real server process
# under concurrent run creation (half the runs complete, half fail and are
# refunded), then every invariant and `apprun audit`.
chaos:
	CHAOS_KILLS=25 $(GO) test ./cmd/apprun -run TestChaos -count=1 -v -timeout 20m

# The deterministic simulation of the money path (package sim): SEEDS
# seeds from SEED_FROM (1), or the one SEED, which replays exactly.
SEEDS ?= 20000
sim:
	SEEDS=$(SEEDS) SEED=$(SEED) SEED_FROM=$(SEED_FROM) $(GO) test ./sim -run '^TestSimulation$$' -count=1 -v -timeout 30m

# Fuzzing of the decoders: requests, model replies (read, then checked),
# providers' error answers, App definitions, Stripe events, the read
# models' records (make test runs every seed corpus). A count of inputs,
# not a time: with a duration, Go 1.26's fuzz coordinator
# can fail a target with a bare "context deadline exceeded" at the deadline
# on a busy machine (golang/go#75804, fixed in Go 1.27), with no input
# found. FUZZ_N sets the count.
FUZZ_N ?= 200000
fuzz:
	$(GO) test ./httpapi -run '^$$' -fuzz FuzzDecodeCreateRun -fuzztime $(FUZZ_N)x
	$(GO) test ./engine -run '^$$' -fuzz FuzzValidateInput -fuzztime $(FUZZ_N)x
	$(GO) test ./apps -run '^$$' -fuzz FuzzParseReply -fuzztime $(FUZZ_N)x
	$(GO) test ./apps -run '^$$' -fuzz FuzzReadReply -fuzztime $(FUZZ_N)x
	$(GO) test ./llm -run '^$$' -fuzz FuzzOpenAIErrorBody -fuzztime $(FUZZ_N)x
	$(GO) test ./apps -run '^$$' -fuzz FuzzDefinition -fuzztime $(FUZZ_N)x
	$(GO) test ./billing -run '^$$' -fuzz FuzzStripeEvent -fuzztime $(FUZZ_N)x
	$(GO) test ./projections -run '^$$' -fuzz FuzzDecodersAgree -fuzztime $(FUZZ_N)x

# Every command of the README and docs/, as written, on a clean clone of
# HEAD (tools/doccheck; DOCS_LONG=1 also runs make test and make bench).
# It runs on free ports, so it passes beside a server on 8080: each file's
# `make run` gets one as APPRUN_ADDR and APPRUN_URL (which every example
# reads), and each ${NAME:-127.0.0.1:PORT} in a block another (doccheck's
# comment says how).
docs-check: walk
	d=$$(mktemp -d) && git clone -q . $$d/x && cd $$d/x && $(GO) build -o bin/apprun ./cmd/apprun && \
	$(GO) run ./tools/doccheck $${DOCS_LONG:+-long} README.md docs/*.md

# The walk of one create (docs/architecture.md): the files and functions
# a create runs from its handler to the log port, in order, recorded by a
# build whose every function notes its entry (tools/walk/overlay writes
# that copy of the source), checked against the documented list.
walk:
	o=$$(mktemp -d) && $(GO) run ./tools/walk/overlay $$o/src > $$o/overlay.json && \
	$(GO) build -overlay $$o/overlay.json -o bin/walk ./tools/walk && \
	bin/walk -check docs/architecture.md; s=$$?; rm -rf $$o; exit $$s

clean:
	rm -rf bin
