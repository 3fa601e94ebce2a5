#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# deb_check.sh contents|lintian SOURCE_DIR DEB_DIR VERSION
# The packages `make deb` left in DEB_DIR (the test package_deb_build makes
# them once; the two checks share them):
#   contents  exactly the packages expected, each holding
#             exactly the files expected (dpkg-deb -c), never a token,
#             key or certificate; the unit, sluice.pc and the conffile name
#             the packaged paths
#   lintian   lintian reports no error (its whole output is printed)
set -euo pipefail
mode=$1 src=$2 dir=$3 version=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
changes=$dir/sluice_${version}-1_$(dpkg --print-architecture).changes
[[ -f $changes ]] || fail "no $changes: did package_deb_build run?"

if [[ $mode == lintian ]]; then
    # lintian warns when run as root; that line is not about the packages.
    out=$(lintian --fail-on error --display-info "$changes" 2>&1) || { echo "$out"; fail "lintian reports errors"; }
    echo "${out:-lintian: nothing to report}" | grep -v 'running with root privileges' || true
    echo "lintian: no errors"
    exit 0
fi
[[ $mode == contents ]] || fail "usage: $0 contents|lintian ..."

ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg --print-architecture)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pkgs=(libsluice0 libsluice-dev sluice sluiced sluice-redis-module)
printf '%s\n' "${pkgs[@]}" | sort >"$tmp/want-pkgs"
(cd "$dir" && ls -1 ./*.deb) | sed -E 's|^\./||; s|_.*||' | grep -v -- '-dbgsym$' | sort >"$tmp/got-pkgs"
diff -u --label expected --label built "$tmp/want-pkgs" "$tmp/got-pkgs" ||
    fail "the packages built are not the packages expected"

docs() { # docs PACKAGE: what every package's doc directory holds
    printf "usr/share/doc/$1/%s\n" changelog.Debian changelog copyright
    echo "usr/share/lintian/overrides/$1"
}
expect() {
    case $1 in
    libsluice0) printf '%s\n' "usr/lib/$ma/libsluice.so.0" "usr/lib/$ma/libsluice.so.$version" ;;
    libsluice-dev)
        printf '%s\n' usr/include/sluice.h usr/include/sluice_adaptive.h "usr/lib/$ma/libsluice.a" \
            "usr/lib/$ma/libsluice.so" "usr/lib/$ma/pkgconfig/sluice.pc" ;;
    sluice)
        printf '%s\n' usr/bin/sluice usr/share/man/man1/sluice.1 usr/share/man/man5/sluice-rules.5 \
            usr/share/doc/sluice/README.md usr/share/doc/sluice/docs/algorithms.md \
            usr/share/doc/sluice/docs/cli.md usr/share/doc/sluice/docs/rules.md ;;
    sluiced)
        printf '%s\n' usr/bin/sluiced etc/sluice/sluice.yaml lib/systemd/system/sluiced.service \
            usr/share/man/man5/sluice.yaml.5 usr/share/man/man8/sluiced.8 \
            usr/share/doc/sluiced/README.md
        (cd "$src" && ls docs/*.md) | sed 's|^|usr/share/doc/sluiced/|'
        (cd "$src/examples" && find . -type f -not -regex '.*\.\(token\|key\|pem\)$') |
            sed 's|^\./|usr/share/doc/sluiced/examples/|' ;;
    sluice-redis-module) echo "usr/lib/$ma/sluice/sluice-redis.so" ;;
    esac
    docs "$1"
}
for p in "${pkgs[@]}"; do
    deb=$dir/${p}_${version}-1_$arch.deb
    expect "$p" | sort >"$tmp/want"
    # Files and links, not directories; dh_compress decides which docs get .gz.
    dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed -E 's|^\./||; s|\.gz$||' | sort >"$tmp/got"
    if grep -E '\.(token|key|pem)$' "$tmp/got"; then
        fail "$p ships the secrets above"
    fi
    diff -u --label "$p expected" --label "$p dpkg-deb -c" "$tmp/want" "$tmp/got" ||
        fail "$p does not hold exactly the files expected"
    echo "$p: $(wc -l <"$tmp/got") files, as expected"
    dpkg-deb -x "$deb" "$tmp/root"
done

grep -qx 'ExecStart=/usr/bin/sluiced -c /etc/sluice/sluice.yaml' "$tmp/root/lib/systemd/system/sluiced.service" ||
    fail "the packaged unit's ExecStart"
grep -qx 'prefix=/usr' "$tmp/root/usr/lib/$ma/pkgconfig/sluice.pc" || fail "sluice.pc prefix"
grep -qx "libdir=\${prefix}/lib/$ma" "$tmp/root/usr/lib/$ma/pkgconfig/sluice.pc" || fail "sluice.pc libdir"
dpkg-deb -e "$dir/sluiced_${version}-1_$arch.deb" "$tmp/ctl"
grep -qx /etc/sluice/sluice.yaml "$tmp/ctl/conffiles" || fail "/etc/sluice/sluice.yaml is not a conffile"
grep -q 'deb-systemd-helper' "$tmp/ctl/postinst" || fail "sluiced's postinst does not enable the unit"
readelf -d "$tmp/root/usr/lib/$ma/libsluice.so.$version" | grep -q 'soname: \[libsluice.so.0\]' ||
    fail "the packaged library's soname"
echo "unit, sluice.pc, conffile, postinst and soname: as packaged paths need"
