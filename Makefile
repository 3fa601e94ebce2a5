# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# A thin wrapper over CMake: the README's two commands, `make run` and
# `make test`, and the rest of the developer's loop. Every target first makes
# sure the Debian packages it needs are there (scripts/deps.sh).
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
BUILD     ?= build
CMAKE_GEN  = cmake -S . -Wno-dev
# The main build uses clang so that the libFuzzer drivers are built (and run
# briefly) with everything else; the sanitizer build uses gcc, so both
# compilers see the code with -Wall -Wextra -Werror.
MAIN_CC   ?= clang

.PHONY: all deps deps-test deps-deb build run test test-redis-tls test-sanitize bench soak fuzz format clean install deb

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

build: deps
	@$(CMAKE_GEN) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$(MAIN_CC) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# make install [PREFIX=/usr] [DESTDIR=/tmp/stage]: into PREFIX (without it,
# the configured prefix, /usr/local), staged under DESTDIR. A build directory
# already configured is used as it is (only brought up to date), so that
# installing never changes how it was configured.
PREFIX    ?=
install:
	@[ -f $(BUILD)/CMakeCache.txt ] || $(MAKE) --no-print-directory build
	@cmake --build $(BUILD) -j $(JOBS)
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) $(if $(PREFIX),--prefix "$(PREFIX)")

# make deb: the Debian packages, built by dpkg-buildpackage on a copy of the
# tree; they land in DEB_OUT (scripts/deb.sh, docs/install.md).
DEB_OUT   ?= $(BUILD)/deb
deb:
	@scripts/deps.sh deb
	@scripts/deb.sh $(DEB_OUT) $(JOBS)

run: build
	@scripts/run.sh $(BUILD)

test: deps-test build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# TLS to Redis alone: the tests labelled redis_tls (also part of `make test`):
# redis-server, Sentinel and Cluster serving only TLS with client certificates.
test-redis-tls: deps-test build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L redis_tls

# ASan+UBSan over the whole suite, then ThreadSanitizer over the threaded
# tests (a separate build: TSan and ASan cannot share one).
test-sanitize: deps-test
	@$(CMAKE_GEN) -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=gcc \
	    -DSL_SANITIZE=address,undefined -DSL_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	@$(CMAKE_GEN) -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=gcc \
	    -DSL_SANITIZE=thread -DSL_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -L threads -j $(JOBS)

bench:
	@scripts/deps.sh bench
	@$(CMAKE_GEN) -B build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$(MAIN_CC) \
	    -DSL_BUILD_TESTS=OFF >/dev/null
	@cmake --build build-release -j $(JOBS)
	@bench/run.sh build-release

# The soak run (10 minutes of mixed traffic with idle, slow and abusive
# connections; not in CI): RSS flat, p99 stable, no error for good clients.
SOAK_SECONDS ?= 600
soak:
	@scripts/deps.sh bench
	@$(CMAKE_GEN) -B build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=$(MAIN_CC) \
	    -DSL_BUILD_TESTS=OFF >/dev/null
	@cmake --build build-release -j $(JOBS)
	@bench/soak.sh build-release $(SOAK_SECONDS)

# Every fuzzer for longer than the smoke run of `make test` (FUZZ_SECONDS
# each), or for FUZZ_RUNS executions each (make fuzz FUZZ_RUNS=10000000: the
# run docs/security.md reports).
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
fuzz: build
	@scripts/fuzz.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_RUNS)

# The same files tests/format_check.sh checks: every C file git tracks
# (redis-module/ and checkbody/ included), or, outside a git checkout,
# every C file under the source folders.
format:
	@{ git ls-files '*.c' '*.h' 2>/dev/null || find include lib conf checkbody cli server store \
	    rulesdb redis-module tests bench fuzz -name '*.[ch]'; } | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan build-release
