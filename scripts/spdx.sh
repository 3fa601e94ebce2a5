#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# spdx.sh [--check] - the licence header on every source file git tracks:
#
#   SPDX-License-Identifier: BSD-2-Clause
#   Copyright (c) The Sluice authors
#
# in the file's comment syntax (C and headers, Lua, Python, shell, CMake,
# make, the configured .in files, the YAML examples and configuration, the
# scdoc man pages), at the top; after a #! line, which stays first, and
# after an scdoc page's title line, which scdoc requires first. Files that
# have it are left alone, so running it again changes nothing. Data (the
# fuzz corpus, dictionaries, JSON), docs and Debian's control files are not
# source files here (debian/copyright states the licence for all of them).
#
# --check: change nothing; list the source files without the header and
# exit 1 if there is any (tests/spdx_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
spdx='SPDX-License-Identifier: BSD-2-Clause'
copyright='Copyright (c) The Sluice authors'

# style FILE: sets s to the comment style of a tracked file, or to nothing
# for a file that is not source. (Builtins only, here and in has_header:
# the check runs in the test suite over every tracked file.)
style() {
    s=
    case $1 in
    fuzz/corpus/*) ;;
    *.c | *.h) s=c ;;
    *.lua) s=lua ;;
    *.scd) s=scd ;;
    *.py | *.sh | *.cmake | CMakeLists.txt | */CMakeLists.txt | Makefile | debian/rules | *.in) s=hash ;;
    examples/*.yaml | examples/*/*.yaml | dist/*.yaml) s=hash ;;
    *)  # a script without an extension
        case ${1##*/} in
        *.*) ;;
        *)
            local first=
            IFS= read -r first <"$1" || true
            if [[ $first =~ ^#!.*(sh|bash|python3?)([[:space:]]|$) ]]; then s=hash; fi ;;
        esac ;;
    esac
}

# The two lines, each alone on its line in one of the comment syntaxes,
# within the first six lines.
has_header() {
    local lines=() l got_spdx=0 got_copyright=0
    mapfile -n 6 -t lines <"$1"
    for l in "${lines[@]}"; do
        case $l in
        "/* $spdx */" | "# $spdx" | "-- $spdx" | "; $spdx") got_spdx=1 ;;
        "/* $copyright */" | "# $copyright" | "-- $copyright" | "; $copyright") got_copyright=1 ;;
        esac
    done
    ((got_spdx && got_copyright))
}

add_header() { # add_header FILE STYLE
    local f=$1 lines keep=0
    case $2 in
    c) lines="/* $spdx */"$'\n'"/* $copyright */" ;;
    lua) lines="-- $spdx"$'\n'"-- $copyright" ;;
    hash) lines="# $spdx"$'\n'"# $copyright" ;;
    scd) lines="; $spdx"$'\n'"; $copyright"; keep=1 ;;
    esac
    if [[ $2 == hash ]] && head -n 1 "$f" | grep -q '^#!'; then keep=1; fi
    { head -n "$keep" "$f"; printf '%s\n' "$lines"; tail -n "+$((keep + 1))" "$f"; } >"$f.spdx"
    chmod --reference="$f" "$f.spdx"
    mv "$f.spdx" "$f"
}

check=0
[[ ${1:-} == --check ]] && check=1
missing=()
n=0
while IFS= read -r -d '' f; do
    [[ -f $f && ! -L $f ]] || continue
    style "$f"
    [[ -n $s ]] || continue
    n=$((n + 1))
    has_header "$f" && continue
    if ((check)); then
        missing+=("$f")
    else
        add_header "$f" "$s"
        echo "spdx: $f"
    fi
done < <(git ls-files -z)

if ((check)); then
    if ((${#missing[@]})); then
        printf 'no SPDX licence header (run scripts/spdx.sh): %s\n' "${missing[@]}" >&2
        exit 1
    fi
    echo "all $n source files carry the SPDX licence header"
fi
