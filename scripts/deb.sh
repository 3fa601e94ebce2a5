#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# deb.sh OUT_DIR [JOBS] - build the Debian packages (`make deb`).
#
# The build runs on a copy of the tree, OUT_DIR/sluice-VERSION (the files git
# tracks plus untracked ones it does not ignore, as they are in the work
# tree), never in the tree itself, so no build directory or earlier output
# gets into the packages. dpkg-buildpackage -us -uc -b leaves the packages
# beside the copy, in OUT_DIR, with its log in OUT_DIR/build.log; the copy is
# removed when the build succeeds.
#
# DEB_BUILD_OPTIONS=nocheck: the package build does not run the test suite,
# which has just run (and whose packaging tests call this script).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$1
jobs=${2:-2}

version=$(sed -n '1s/^sluice (\([^-)]*\).*/\1/p' "$src/debian/changelog")
[[ -n $version ]] || { echo "deb.sh: no version in debian/changelog" >&2; exit 1; }
project=$(sed -n 's/^project(sluice VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
if [[ $version != "$project" ]]; then
    echo "deb.sh: debian/changelog says $version, CMakeLists.txt $project: add a changelog entry" >&2
    exit 1
fi

rm -rf "$out"
copy=$out/sluice-$version
mkdir -p "$copy"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
        tar --null --no-recursion --ignore-failed-read -T - -cf -) | tar -C "$copy" -xf -
else
    tar -C "$src" --exclude='./build*' --exclude='./debian/.debhelper' -cf - . | tar -C "$copy" -xf -
fi

echo "deb.sh: dpkg-buildpackage in $copy (profile: nocheck; log: $out/build.log)"
if ! (cd "$copy" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
    DEB_BUILD_PROFILES=nocheck dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
    tail -n 40 "$out/build.log" >&2
    echo "deb.sh: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
    exit 1
fi
rm -rf "$copy"
ls -1 "$out"/*.deb
