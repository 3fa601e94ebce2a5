#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# go.sh [MIN] - print the path of a Go command at least MIN (default 1.26.0),
# for the benchmarks' peers and the test tools built with `go build`
# (bench/peers, tests/xds/server, tests/tools/grpcurl). Sluice itself never
# needs Go.
#
# Looked for, in order: $GO, `go` on PATH, /usr/local/go/bin/go, and the
# toolchain this script fetched before. When none is new enough (Debian 12's
# golang-go is 1.19), it fetches the Go release pinned below from the Go
# module proxy - the same module, golang.org/toolchain, that `go` itself
# downloads for GOTOOLCHAIN - checks the archive's SHA-256 against the one
# written here, and unpacks it into $SLUICE_GO_CACHE (default
# ~/.cache/sluice). Needs curl and unzip. Exits 1, saying why, when no Go can
# be had, so that a caller can skip with that reason.
set -euo pipefail

min=${1:-1.26.0}
pin=1.26.8
declare -A sha256=(
    [amd64]=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
    [arm64]=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99
)
cache=${SLUICE_GO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}

# new_enough GO: GO runs and reports a version at least $min.
new_enough() {
    local v
    v=$(GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 1
    v=${v#go}
    [[ -n "$v" ]] || return 1
    [[ "$(printf '%s\n%s\n' "$min" "$v" | sort -V | head -n1)" == "$min" ]]
}

for cand in "${GO:-}" "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
    if [[ -n "$cand" && -x "$cand" ]] && new_enough "$cand"; then
        echo "$cand"
        exit 0
    fi
done

case "$(uname -m)" in
x86_64) arch=amd64 ;;
aarch64) arch=arm64 ;;
*) echo "go.sh: no Go $min or newer, and no pinned toolchain for $(uname -m)" >&2; exit 1 ;;
esac
if [[ "$(printf '%s\n%s\n' "$min" "$pin" | sort -V | head -n1)" != "$min" ]]; then
    echo "go.sh: no Go $min or newer here, and the pinned one, $pin, is older" >&2
    exit 1
fi
name=v0.0.1-go$pin.linux-$arch
root=$cache/golang.org/toolchain@$name
if [[ -x "$root/bin/go" ]] && new_enough "$root/bin/go"; then
    echo "$root/bin/go"
    exit 0
fi
for tool in curl unzip sha256sum; do
    if ! command -v "$tool" >/dev/null; then
        echo "go.sh: no Go $min or newer, and $tool is missing to fetch Go $pin" >&2
        exit 1
    fi
done

proxy=${GOPROXY:-https://proxy.golang.org}
proxy=${proxy%%[,|]*}
[[ "$proxy" == off || "$proxy" == direct ]] && proxy=https://proxy.golang.org
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "go.sh: fetching Go $pin ($arch) from $proxy" >&2
if ! curl -fsSL --retry 2 -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$name.zip"; then
    echo "go.sh: could not fetch Go $pin from $proxy" >&2
    exit 1
fi
got=$(sha256sum "$tmp/go.zip" | cut -d' ' -f1)
if [[ "$got" != "${sha256[$arch]}" ]]; then
    echo "go.sh: Go $pin from $proxy has SHA-256 $got, not ${sha256[$arch]}: refused" >&2
    exit 1
fi
unzip -q "$tmp/go.zip" -d "$tmp/x"
# The module archive keeps no file modes: the commands are made executable
# as the go command does when it unpacks a toolchain.
chmod -R u+w "$tmp/x"
find "$tmp/x/golang.org/toolchain@$name/bin" "$tmp/x/golang.org/toolchain@$name/pkg/tool" \
    -type f -exec chmod +x {} +
mkdir -p "$cache/golang.org"
rm -rf "$root"
mv "$tmp/x/golang.org/toolchain@$name" "$root"
if ! new_enough "$root/bin/go"; then
    echo "go.sh: the fetched Go $pin does not run here" >&2
    exit 1
fi
echo "$root/bin/go"
