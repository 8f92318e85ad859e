# sandboxd — the two commands that matter:
#   make run    install what is missing, build, start the daemon on 127.0.0.1:7878
#   make test   install what is missing, build, run every test suite
# and the rest: make build | lint | bench | fuzz | sanitize | clean

BUILD     ?= build
LISTEN    ?= 127.0.0.1:7878
STATE_DIR ?= $(shell [ "$$(id -u)" = 0 ] && echo /var/lib/sandboxd || echo $$HOME/.local/state/sandboxd)
PYTEST    := /usr/bin/python3 -m pytest
CMAKE_ARGS ?=

.PHONY: all deps build run test lint unit e2e bench fuzz sanitize clean

all: build

deps:
	@scripts/install-deps

build: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS) >/dev/null
	@ninja -C $(BUILD)

run: build
	@echo "sandboxd: starting on http://$(LISTEN) (state in $(STATE_DIR)); Ctrl-C stops it."
	@echo "  try:  curl -s http://$(LISTEN)/v1/health"
	$(BUILD)/sandboxd --listen $(LISTEN) --state-dir $(STATE_DIR)

# style checks: banned functions, headers on their own, clang-format, layer rule (scripts/lint)
lint: deps
	@scripts/lint

unit: build
	cd $(BUILD) && ctest --output-on-failure

# end-to-end suites against a real daemon: API, hostile code, the SDKs and the CLI
e2e: build
	SANDBOXD_BUILD=$(abspath $(BUILD)) $(PYTEST) -q tests/e2e tests/hostile
	SANDBOXD_BUILD=$(abspath $(BUILD)) $(PYTEST) -q clients/python/tests
	SANDBOXD_BUILD=$(abspath $(BUILD)) clients/js/scripts/test.sh
	SANDBOXD_BUILD=$(abspath $(BUILD)) tests/compat/cloudflare/test.sh
	cd tests/compat/e2b && SANDBOXD_BUILD=$(abspath $(BUILD)) node --test --test-concurrency=1 *.test.mjs
	SANDBOXD_BUILD=$(abspath $(BUILD)) tests/compat/mcp/test.sh

test: build
	@scripts/lint
	cd $(BUILD) && ctest --output-on-failure
	$(PYTEST) -q runtimes/python/tests
	node --test runtimes/node/test/
	$(MAKE) --no-print-directory e2e BUILD=$(BUILD)

bench: build
	@scripts/install-deps --bench
	/usr/bin/python3 bench/run.py --build $(abspath $(BUILD))

# libFuzzer targets for the HTTP parser and the API's JSON validation (clang).
FUZZ_SECONDS ?= 60
fuzz: deps
	@CC=clang cmake -S . -B build-fuzz -G Ninja -DFUZZ=ON -DCMAKE_C_COMPILER=clang >/dev/null
	@ninja -C build-fuzz fuzz_http fuzz_json
	@mkdir -p build-fuzz/corpus/http build-fuzz/corpus/json
	build-fuzz/tests/fuzz/fuzz_http -max_total_time=$(FUZZ_SECONDS) -max_len=8192 build-fuzz/corpus/http tests/fuzz/corpus/http
	build-fuzz/tests/fuzz/fuzz_json -max_total_time=$(FUZZ_SECONDS) -max_len=4096 build-fuzz/corpus/json tests/fuzz/corpus/json

# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_ARGS=-DSANITIZE=ON

clean:
	rm -rf $(BUILD) build-asan build-fuzz
