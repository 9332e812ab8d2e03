# The project's vocabulary. `make test` is what CI runs; `make demo` shows the main job.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo

.PHONY: test setup fmt-check clippy test-native nostd msrv test-browser doc demo demo-check bench bench-downstream check-downstream bench-browser size

## test: everything, from a fresh clone: setup, fmt, clippy, docs, native tests, the demo, no_std/wasm
## builds, the MSRV check, the browser suites, the Redis, PostgreSQL, SQLite and tool suites against
## servers of their own, the downstream bench crate. scripts/test-all.sh runs the suites (which
## mostly wait) beside the checks and builds (which mostly compute), each part's output in
## target/test-logs/, and ends with a table of parts and wall times; `make test-serial` runs the
## same parts one after the other.
TEST_PARTS := setup fmt-check clippy doc test-native demo-check nostd msrv test-browser test-redis test-pg test-cli test-engine-docs check-downstream test-idb test-js test-sqlite
.PHONY: test-serial
test:
	@scripts/test-all.sh

test-serial: $(TEST_PARTS)

## setup: rustup targets, wasm-bindgen-cli (the Cargo.lock version), Chromium + ChromeDriver,
## redis-server and redis-sentinel; quiet when all is there
setup:
	@scripts/setup.sh
	@scripts/redis-setup.sh
	@scripts/pg-setup.sh
	@scripts/idb-setup.sh

fmt-check:
	$(CARGO) fmt --all -- --check

## clippy and doc build in a target dir of their own (CHECK_TARGET_DIR): cargo locks a target dir
## while it compiles, and the suites that `make test` runs beside them build and run in target/.
## The workspace run lints the core with every feature (CORE_FEATURES: named, so that it stays
## so when no member asks for one any more); a run of its own, `-p alkstore-mem --all-features`,
## linted the same code with the same features and built 36 CPU-s of dependencies again.
CHECK_TARGET_DIR ?= target/check
CORE_FEATURES := alkstore-mem/std,alkstore-mem/serde,alkstore-mem/tracing
clippy:
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) $(CARGO) clippy --workspace --all-targets --features $(CORE_FEATURES) -- -D warnings
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) $(CARGO) clippy -p alkstore-mem-web -p alkstore-mem-conformance -p alkstore-idb -p alkstore-idb-harness -p alkstore-idb-js --all-targets --target wasm32-unknown-unknown -- -D warnings

## test-native: the whole workspace's tests natively (conformance suite, core, adapters, doctests),
## except the Redis engine's (and its tools' topology suites) and the alkstore tool's, which need servers: test-redis and test-cli run them
## (and the PostgreSQL and SQLite engines', in test-pg and test-sqlite). NO_TESTS are packages
## with no test of their own (benchmark, demo and browser-bundle crates; clippy --all-targets
## checks that they compile): left out, they cost no debug build of their dependencies here.
## The core is tested with all its features (CORE_FEATURES) in the same run (a run of its own
## built its dependencies again, 20 CPU-s, and ran its unit tests twice).
NO_TESTS := alkstore-pg-tools alkstore-sqlite-tools alkstore-mem-bench alkstore-mem-size-probe alkstore-idb-harness alkstore-idb-js
test-native:
	$(CARGO) test --workspace --features $(CORE_FEATURES) --exclude alkstore-redis --exclude alkstore-redis-tools --exclude alkstore-pg --exclude alkstore-cli --exclude alkstore-sqlite $(foreach p,$(NO_TESTS),--exclude $(p))

## nostd: the core builds for a target with no std at all, and for the browser target (that
## check in clippy's target dir, whose wasm32 dependencies are then checked already)
nostd:
	$(CARGO) build -p alkstore-mem --target wasm32v1-none --no-default-features
	$(CARGO) build -p alkstore-mem --target wasm32v1-none --no-default-features --features serde,tracing
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) $(CARGO) check -p alkstore-mem -p alkstore-mem-web --target wasm32-unknown-unknown

## msrv: the published crates build with their declared rust-version (1.85), natively and for the
## browser, with that toolchain (installed by rustup when missing; its own target dir)
MSRV := 1.85.0
msrv:
	@rustup toolchain list | grep -q '^$(MSRV)' || rustup toolchain install $(MSRV) --profile minimal --target wasm32-unknown-unknown >/dev/null
	@rustup target list --toolchain $(MSRV) --installed | grep -q wasm32-unknown-unknown || rustup target add --toolchain $(MSRV) wasm32-unknown-unknown >/dev/null
	CARGO_TARGET_DIR=target/msrv $(CARGO) +$(MSRV) check -q -p alkstore-mem -p alkstore-mem-tokio -p alkstore-mem-web -p alkstore-kit -p alkstore-redis -p alkstore-pg -p alkstore-sqlite -p alkstore-cli -p alkstore-idb
	CARGO_TARGET_DIR=target/msrv $(CARGO) +$(MSRV) check -q -p alkstore-mem -p alkstore-mem-web -p alkstore-idb --target wasm32-unknown-unknown

## test-browser: the conformance suite in headless Chromium (fails if no browser, or if no test ran)
test-browser:
	@scripts/test-browser.sh

## demo-check: the demo runs to completion and its own assertions hold (debug build, quiet;
## its output is shown when it fails). It asserts the fencing outcome, not timings, so a
## machine starved of CPU passes too.
demo-check:
	@out=$$(mktemp); \
	if $(CARGO) run -q -p alkstore-mem-tokio --example demo > "$$out" 2>&1; then rm -f "$$out"; \
	else status=$$?; cat "$$out"; rm -f "$$out"; echo "demo-check: the demo failed" >&2; exit $$status; fi

## demo: the main job on tokio: workers, short leases, a stalled worker fenced off, keep_alive
demo:
	$(CARGO) run --release -q -p alkstore-mem-tokio --example demo

## bench: criterion benchmarks with ratios against baselines from the same run (floor, hand-rolled
## map, DashMap; 1 vs 2 threads, 4 threads on shared names, spin vs std Mutex), heap bytes and
## allocations per op, all in the workspace build (thin LTO) and as a downstream crate (no LTO),
## instructions per op under callgrind, then one summary table against the targets.
## BENCH_ARGS go to criterion, e.g. make bench BENCH_ARGS="--warm-up-time 1 --measurement-time 2"
BENCH_ARGS ?=
bench:
	$(CARGO) bench -p alkstore-mem-bench --bench speed -- $(BENCH_ARGS)
	$(CARGO) bench -p alkstore-mem-bench --bench memory
	$(MAKE) --no-print-directory bench-downstream
	@scripts/instructions.sh | tee target/bench-instructions.md
	@python3 bench/summary.py

## bench-downstream: the same speed and memory benchmarks in bench/downstream, a crate outside the
## workspace that depends on alkstore-mem by path and builds as a user's does (release, no LTO)
bench-downstream:
	$(CARGO) bench --manifest-path bench/downstream/Cargo.toml --bench speed -- $(BENCH_ARGS)
	$(CARGO) bench --manifest-path bench/downstream/Cargo.toml --bench memory

## check-downstream: bench/downstream still compiles (not a workspace member, so --workspace skips it);
## in clippy's target dir, where most of its dependencies are checked already
check-downstream:
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) $(CARGO) check --manifest-path bench/downstream/Cargo.toml --benches --examples

## bench-browser: the wasm registry against navigator.locks in headless Chromium
bench-browser: setup
	@scripts/bench-browser.sh

## size: the shipped .wasm of a small module using the web adapter, raw and gzipped
size: setup
	@scripts/size.sh

## doc: rustdoc for every crate, its binaries and examples (and the web crates on wasm32),
## warnings as errors. With the examples, dev-dependencies take part in the feature resolution
## as in clippy's --all-targets run, so the dependencies clippy checked serve here too (without
## them, 21 CPU-s of redis, tokio and tokio-postgres were checked again).
doc:
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) RUSTDOCFLAGS="-D warnings" $(CARGO) doc -q --workspace --no-deps --lib --bins --examples
	CARGO_TARGET_DIR=$(CHECK_TARGET_DIR) RUSTDOCFLAGS="-D warnings" $(CARGO) doc -q -p alkstore-mem-web -p alkstore-idb -p alkstore-idb-js --no-deps --target wasm32-unknown-unknown

## engines --------------------------------------------------------------------------------
## The test binaries of the engines with a server or a file are built by one `cargo test
## --no-run` for the three of them (ENGINE_PKGS), and those of the packages built on the
## shipped engines (the alkstore tool, the Redis topologies' suites and tools) by another
## (TOOL_PKGS): built one package at a time, each got other dependency features and its own
## build of tokio, syn, redis and the workspace's crates under them. Two sets, not one: the
## engines' own tests turn on their `test-clock` hooks, which must not reach the tool's
## binary or the failover figures (they test the builds users get). The suites (test-redis,
## test-pg, test-sqlite, test-cli) run their package's binaries from these builds
## (scripts/engine-tests.sh, as `cargo test -p` runs them), after them and before their servers
## start; the doctests run in test-engine-docs.
.PHONY: build-test-engines test-engine-docs
ENGINE_PKGS := -p alkstore-redis -p alkstore-pg -p alkstore-sqlite
TOOL_PKGS := -p alkstore-cli -p alkstore-redis-tools
ENGINE_TESTS = env TEST_PKGS="$(ENGINE_PKGS)" CARGO="$(CARGO)" scripts/engine-tests.sh
TOOL_TESTS = env TEST_PKGS="$(TOOL_PKGS)" CARGO="$(CARGO)" scripts/engine-tests.sh
build-test-engines:
	$(CARGO) test -q --no-run $(ENGINE_PKGS)
	$(CARGO) test -q --no-run $(TOOL_PKGS)

## test-engine-docs: the doctests of those packages (none needs a server)
test-engine-docs: build-test-engines
	$(CARGO) test -q --doc $(ENGINE_PKGS)
	$(CARGO) test -q --doc $(TOOL_PKGS)
## end engines ----------------------------------------------------------------------------

## redis ----------------------------------------------------------------------------------
## The Redis engine (adapters/redis). Each target builds first, then starts its own scratch
## redis-server on 127.0.0.1:$(REDIS_PORT) (scripts/redis-run.sh: mktemp -d, no RDB/AOF, stopped
## by its pid on exit) for the run only, so that several run side by side on different ports:
##   make demo-redis REDIS_PORT=6401 & make test-redis REDIS_PORT=6402
## The fault tests start servers of their own on the fixed ports REDIS_FAULT_PORTS, which
## REDIS_PORT must avoid (refused). No other Redis is touched.
REDIS_PORT ?= 6390
REDIS_FAULT_PORTS := 6391 6392 6393 6394 6395 6396 6397 6398 6399 6421 6422 6431 6432 6433 6434 6435 6436 6437 6438 6439 6440 6441 6442 6443 6444 6445 6446 6447 6448 6449 6450 6451 6452 6453 6454 6455 6456 6457 6458 6459 6460 6461 6462 6463 6464 6465 6466 6467 6468 6469
REDIS_RUN = scripts/redis-run.sh --port $(REDIS_PORT) --
.PHONY: redis-setup redis-port test-redis bench-redis demo-redis failover-redis

## redis-setup: redis-server from the Debian package, when missing (as root)
redis-setup:
	@scripts/redis-setup.sh

## redis-port: REDIS_PORT is not one of the fault tests' own ports
redis-port:
	@if [ -n "$(filter $(REDIS_PORT),$(REDIS_FAULT_PORTS))" ]; then \
	  echo "REDIS_PORT=$(REDIS_PORT) is one of the fault tests' own ports ($(REDIS_FAULT_PORTS)); pick another" >&2; exit 1; fi

## test-redis: every Redis suite (contract, conformance, multi-process, faults) against a real server;
## then the topologies' suites (adapters/redis/tools/tests), which start their own servers on 6450-6469
## (Sentinel: a master, a replica, three sentinels on 6450-6454; Cluster: 3 masters, 3 replicas on 6460-6465)
test-redis: redis-setup redis-port build-test-engines
	$(REDIS_RUN) $(ENGINE_TESTS) alkstore-redis
	$(TOOL_TESTS) alkstore-redis-tools
	failover=$$($(TOOL_TESTS) alkstore-redis-tools --bin failover); "$$failover" --failovers 2

## bench-redis: try_lock+release against a hand-rolled SET NX PX lock, 16 tasks on one connection, in-memory alongside;
## then, with a replica of the server on $(REDIS_BENCH_REPLICA_PORT) (started and stopped by the bench, attached only for these rows), try_lock+release with replica ack
REDIS_BENCH_REPLICA_PORT ?= 6445
bench-redis: redis-setup redis-port
	$(CARGO) build --release -q -p alkstore-redis-tools --bin bench
	ALKSTORE_BENCH_REPLICA_PORT=$(REDIS_BENCH_REPLICA_PORT) $(REDIS_RUN) $(CARGO) run --release -q -p alkstore-redis-tools --bin bench

## failover-redis: the failover figures: 8 processes taking, renewing and releasing leases on 3 names through a
## Sentinel set of its own (6455-6459), failed over 10 times (SENTINEL FAILOVER and SIGKILL in turn), without and with
## replica ack; prints the table of double grants, token inversions, leases lost, waiters stranded and pauses
failover-redis: redis-setup
	$(CARGO) build --release -q -p alkstore-redis-tools --bin failover
	$(CARGO) run --release -q -p alkstore-redis-tools --bin failover -- --failovers 10

## demo-redis: three processes share invoice/1001; a stalled one is fenced off (asserts the outcome)
demo-redis: redis-setup redis-port
	$(CARGO) build -q -p alkstore-redis-tools --bin redis-demo
	$(REDIS_RUN) $(CARGO) run -q -p alkstore-redis-tools --bin redis-demo
## end redis -------------------------------------------------------------------------------

## postgres -------------------------------------------------------------------------------
## The PostgreSQL engine (adapters/pg). Each target builds first, then starts its own
## throwaway cluster on 127.0.0.1:$(PG_PORT) (scripts/pg-run.sh: initdb into mktemp -d as user
## postgres, trust auth, socket in the scratch dir, stopped with pg_ctl stop -m immediate in a
## trap); fault tests start their own clusters on the fixed ports PG_FAULT_PORTS, and the
## pooler tests their own PgBouncers on 6439 (session) and 6440 (transaction), which PG_PORT
## must avoid (refused). No other server is touched.
.PHONY: pg-setup pg-port test-pg test-pg-cancel print-pg-cancel bench-pg demo-pg
PG_PORT ?= 5439
PG_FAULT_PORTS := 5440 5441 5442 5443 5444 5445 5451 5452 5453 5454 5455 6439 6440

## pg-port: PG_PORT is not one of the fault tests' own ports
pg-port:
	@if [ -n "$(filter $(PG_PORT),$(PG_FAULT_PORTS))" ]; then \
	  echo "PG_PORT=$(PG_PORT) is one of the fault tests' own ports ($(PG_FAULT_PORTS)); pick another" >&2; exit 1; fi

## pg-setup: PostgreSQL from the Debian package, when missing (as root)
pg-setup:
	@scripts/pg-setup.sh

## test-pg: every PostgreSQL suite (contract, conformance, tokens, fencing, multi-process,
## faults) against a real server; PG_TEST_ARGS go to scripts/engine-tests.sh (`--test <name>`, `-- <test args>`; make test skips the two tests
## of test-pg-cancel here, and runs them at its end)
PG_TEST_ARGS ?=
PG_CANCEL_UNDER_LOAD := a_holders_keep_alive_survives_callers_that_time_out_around_it request_timeouts_on_acquire_leave_an_unrelated_keep_alive_its_lease
test-pg: pg-setup pg-port build-test-engines
	scripts/pg-run.sh --port $(PG_PORT) -- $(ENGINE_TESTS) alkstore-pg $(PG_TEST_ARGS)

## test-pg-cancel: the two cancel-safety tests that bound a holder's renewals while 10 tasks drop
## hundreds of acquires a second around it (tests/cancel.rs): make test runs them last, alone on
## the machine, since the compilers' load beside them is not the engine's
test-pg-cancel: pg-setup pg-port build-test-engines
	scripts/pg-run.sh --port $(PG_PORT) -- $(ENGINE_TESTS) alkstore-pg --test cancel -- --exact $(PG_CANCEL_UNDER_LOAD)

## bench-pg: try_lock+release against a hand-rolled lease row and pg_try_advisory_lock in the same
## run, and 16 tasks on a pool of 4; twice: on a cluster with fsync off (the tests' setting: CPU
## per statement) and on one with fsync on (a production server's: WAL flushes); then snapshot()
## of 100k and 1M live leases (time, resident memory; one process each)
bench-pg: pg-setup pg-port
	$(CARGO) build --release -q -p alkstore-pg-tools --bin pg-bench --bin pg-snapshot
	scripts/pg-run.sh --port $(PG_PORT) -- $(CARGO) run --release -q -p alkstore-pg-tools --bin pg-bench
	@echo
	PG_FSYNC=on scripts/pg-run.sh --port $(PG_PORT) -- $(CARGO) run --release -q -p alkstore-pg-tools --bin pg-bench
	@echo
	scripts/pg-run.sh --port $(PG_PORT) -- sh -c 'target/release/pg-snapshot 100000 && target/release/pg-snapshot 1000000'

## demo-pg: three processes share invoice/1001; the database refuses the stalled one's write
## through fence() (asserts the outcome)
demo-pg: pg-setup pg-port
	$(CARGO) build -q -p alkstore-pg-tools --bin pg-demo
	scripts/pg-run.sh --port $(PG_PORT) -- $(CARGO) run -q -p alkstore-pg-tools --bin pg-demo
## end postgres ----------------------------------------------------------------------------

## cli ------------------------------------------------------------------------------------
## test-cli: the alkstore tool's tests (cli/), its binary run against a scratch redis-server on
## 127.0.0.1:$(CLI_REDIS_PORT) (built first, so the server is up only while the tests run)
.PHONY: test-cli
CLI_REDIS_PORT ?= 6390
CLI_PG_PORT ?= 5439
test-cli: redis-setup pg-setup build-test-engines
	scripts/pg-run.sh --port $(CLI_PG_PORT) -- scripts/redis-run.sh --port $(CLI_REDIS_PORT) -- $(TOOL_TESTS) alkstore-cli
## end cli ---------------------------------------------------------------------------------

## idb ------------------------------------------------------------------------------------
## The browser engine (adapters/idb): locks shared by every tab and worker of an origin through
## IndexedDB. Its harness (adapters/idb/harness: a wasm-bindgen bundle, pages, workers, and
## Node drivers on playwright-core) serves pages on 127.0.0.1:8790-8799 only, to headless
## Chromium with a fresh profile that is removed afterwards.
.PHONY: idb-setup test-idb bench-idb demo-web js test-js

## idb-setup: Node.js + npm (Debian packages, as root, when missing) and the harness's
## playwright-core from its package-lock.json; the browser pieces come from scripts/setup.sh
idb-setup:
	@scripts/setup.sh
	@scripts/idb-setup.sh

## test-idb: native tests, the conformance suite + engine and fault tests in a window and in a
## dedicated worker, the cross-context tests and faults (2 pages, 4 workers), the scenarios
## (clock steps, dropped futures, hostile code, ...), the demo headless in one and two tabs;
## first, a check that the script itself stops on a failing or empty part (a second, no build)
test-idb: idb-setup
	@scripts/check-test-idb.sh -q
	@scripts/test-idb.sh

## bench-idb: try_lock + release against a hand-written IndexedDB cycle and navigator.locks, in a
## window and in a worker, and the cross-context wake-up latency (ratios printed, not asserted)
bench-idb: idb-setup
	@scripts/idb-harness.sh bench | tee target/bench-idb.md

## demo-web: a leader election on the npm package (3 tabs and their workers; the leader's tab
## closed, a leader frozen and fenced off): built (make js) and run headless (the story printed and
## checked, a screenshot saved to DEMO_SCREENSHOT, target/demo-web.png by default; the README's
## is refreshed with DEMO_SCREENSHOT=adapters/idb/demo.png), then, from a terminal, served for
## your browser until Ctrl-C (DEMO_SERVE=1: always serve; DEMO_SERVE=0: never)
DEMO_SERVE ?= auto
DEMO_SCREENSHOT ?= target/demo-web.png
demo-web: idb-setup
	@mkdir -p $(dir $(DEMO_SCREENSHOT))
	@serve=; if [ "$(DEMO_SERVE)" = 1 ] || { [ "$(DEMO_SERVE)" = auto ] && [ -t 0 ]; }; then serve=--serve; fi; \
	scripts/idb-harness.sh demo --screenshot $(DEMO_SCREENSHOT) $$serve
## js: the npm package alkstore-idb (adapters/idb/js: the crate alkstore-idb-js through
## wasm-bindgen --target web, index.js, index.d.ts, README.md), packed by npm pack into
## target/js/alkstore-idb-<version>.tgz; prints its size (wasm + JS, raw and gzipped)
js: idb-setup
	@scripts/js-build.sh

## test-js: the package's tests on the packed tarball: its types under tsc --strict (typescript
## from adapters/idb/js/test/package-lock.json), then in headless Chromium (pages on
## 127.0.0.1:8800-8809) the README's first example, the Web Locks rules of request/query and
## the lease API in a window and in a dedicated worker, 2 pages and 4 dedicated workers contending
test-js: idb-setup
	@scripts/test-js.sh
## end idb ---------------------------------------------------------------------------------

## sqlite ---------------------------------------------------------------------------------
## The SQLite engine (adapters/sqlite): no server; every test works on files in scratch
## directories of its own (mktemp-style, under the system temp dir, removed afterwards).
.PHONY: test-sqlite bench-sqlite demo-sqlite

## test-sqlite: every SQLite suite (conformance, contract, fencing, multi-process, faults),
## built first so that the multi-process tests start their children at once
test-sqlite: build-test-engines
	$(ENGINE_TESTS) alkstore-sqlite

## bench-sqlite: try_lock+release against a hand-rolled lease row (direct and via spawn_blocking)
## and flock in the same run, for synchronous NORMAL and FULL (medians of 10 interleaved rounds),
## instructions and system calls per cycle (with valgrind and strace, when installed), then 4
## processes contending, the cross-process wake-up, the takeover after kill -9, the idle CPU;
## printed, never asserted (BENCH_N cycles, default 3000; BENCH_COUNTS=0 skips the counts)
bench-sqlite:
	$(CARGO) build --release -q -p alkstore-sqlite-tools --bin sqlite-bench
	$(CARGO) run --release -q -p alkstore-sqlite-tools --bin sqlite-bench | tee target/bench-sqlite.md

## demo-sqlite: three processes share invoice/1001 in one file that also holds the invoices
## table; the stalled one's write is refused by the file itself (asserts the outcome)
demo-sqlite:
	$(CARGO) build -q -p alkstore-sqlite-tools --bin sqlite-demo
	$(CARGO) run -q -p alkstore-sqlite-tools --bin sqlite-demo
## end sqlite ------------------------------------------------------------------------------

## print-pg-cancel: the names of test-pg-cancel's tests (for scripts/test-all.sh)
print-pg-cancel:
	@echo $(PG_CANCEL_UNDER_LOAD)
