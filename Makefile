# The project's vocabulary. `make test` is what CI runs; `make demo` shows the main job.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo

.PHONY: test setup setup-native fmt-check clippy test-native nostd test-browser doc

## test: everything, from a fresh clone: setup, fmt, clippy, native tests, no_std/wasm builds, browser suite
test: setup fmt-check clippy test-native nostd

## setup: rustup targets, wasm-bindgen-cli (the Cargo.lock version), Chromium + ChromeDriver
setup:
	@scripts/setup.sh

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## test-native: the whole workspace's tests natively, doctests included
test-native:
	$(CARGO) test --workspace

## nostd: the core builds for a target with no std at all, and for the browser target
nostd:
	$(CARGO) build -p alkstore-mem --target wasm32v1-none
	$(CARGO) check -p alkstore-mem --target wasm32-unknown-unknown

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
