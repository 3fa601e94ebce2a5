#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# build.sh DEST - build the Go peers bench/bench_peers.sh measures Sluice
# against, into DEST (bench_peers.sh gives BUILD_DIR/peers, which .gitignore
# already leaves out), from this folder's module files only:
#
#   DEST/ratelimit   envoyproxy/ratelimit's service command, the version that
#                    ratelimit/go.mod pins (the project tags no releases: a
#                    commit's pseudo-version)
#   DEST/gubernator  gubernator v2's daemon, the version gubernator/go.mod pins
#
# Each go.mod names its peer as a `tool` and go.sum holds the checksums, so
# the go command fetches exactly those modules from the Go module proxy (or
# its cache) and nothing else. A binary newer than its go.mod and go.sum is
# kept. These are benchmark peers, never a dependency of Sluice: nothing
# else in the tree uses them. Needs Go 1.25.6 or newer (scripts/go.sh finds
# or fetches one); without it, or when a build fails, it says which peer is missing and exits 1 after
# trying both, so that the benchmark can go on with what was built.
set -euo pipefail
dest=${1:?usage: build.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# A Go new enough for both peers: the one on PATH, or the release that
# scripts/go.sh fetches from the Go module proxy and checks.
if ! go=$("$here/../../scripts/go.sh" 1.25.6); then
    echo "peers: no Go 1.25.6 or newer: envoyproxy/ratelimit and gubernator not built" >&2
    exit 1
fi

# peer NAME PACKAGE: build PACKAGE of the module in $here/NAME as DEST/NAME.
status=0
peer() {
    local name=$1 pkg=$2 bin=$dest/$1 mod=$here/$1
    if [[ -x "$bin" && "$bin" -nt "$mod/go.mod" && "$bin" -nt "$mod/go.sum" ]]; then
        return 0
    fi
    echo "peers: building $name ($pkg)" >&2
    if ! (cd "$mod" && GOFLAGS=-buildvcs=false nice "$go" build -trimpath -o "$bin.new" "$pkg" \
        >"$dest/$name.build.log" 2>&1); then
        echo "peers: $name did not build; see $dest/$name.build.log" >&2
        status=1
        return 0
    fi
    mv "$bin.new" "$bin"
}
peer ratelimit github.com/envoyproxy/ratelimit/src/service_cmd
peer gubernator github.com/gubernator-io/gubernator/v2/cmd/gubernator
exit $status
