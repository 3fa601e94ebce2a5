#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# deps.sh build|test|bench|deb - make sure the Debian packages Sluice needs are
# installed. As root, installs what is missing with apt-get; otherwise prints
# the exact apt-get line and fails, so nothing is silently skipped.
set -euo pipefail

build_pkgs=(cmake make gcc clang libclang-rt-14-dev pkg-config
    libuv1-dev libyaml-dev libsqlite3-dev libcmocka-dev libcjson-dev
    libhttp-parser-dev libhiredis-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
    protobuf-compiler libprotobuf-dev libsystemd-dev libcurl4-openssl-dev liburing-dev libssl-dev scdoc)
# Real peers and clients the tests talk to (well-kept Debian packages, as docs/architecture.md explains).
test_pkgs=(redis-server redis-sentinel redis-tools nginx-light curl sqlite3 clang-format git
    python3 python3-pytest python3-redis python3-grpcio python3-protobuf python3-seccomp
    protobuf-compiler nghttp2-client python3-h2 groff-base systemd chromium tmux openssl)
bench_pkgs=(redis-server redis-tools nginx-light wrk util-linux nghttp2-client valgrind gnuplot-nox)
# Building the Debian packages (make deb) and checking them (make test).
deb_pkgs=(dpkg-dev debhelper fakeroot lintian)

want=("${build_pkgs[@]}")
case "${1:-build}" in
build) ;;
test) want+=("${test_pkgs[@]}" "${deb_pkgs[@]}") ;;
bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
deb) want+=("${deb_pkgs[@]}") ;;
*) echo "usage: $0 build|test|bench|deb" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
    echo "sluice: missing Debian packages; as root, run:" >&2
    echo "  apt-get update && $line" >&2
    exit 1
fi
echo "sluice: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
