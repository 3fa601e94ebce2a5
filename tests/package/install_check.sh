#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# install_check.sh SOURCE_DIR BUILD_DIR LIBDIR VERSION CC
# `make install DESTDIR=<tmp> PREFIX=/usr` from BUILD_DIR (LIBDIR: the
# configured CMAKE_INSTALL_LIBDIR), then:
# - the staged tree holds exactly the files expected (programs, library
#   with its soname, archive, headers, sluice.pc, man pages, unit,
#   configuration, docs, examples and the Redis module);
# - a program embedding libsluice is built against the staged header and
#   library through pkg-config (PKG_CONFIG_SYSROOT_DIR and PKG_CONFIG_LIBDIR
#   into DESTDIR), linked shared and static, and run;
# - no secret is ever installed: with a token, a key and a certificate
#   planted in the source's examples directory (where a development
#   instance once kept its admin token), no *.token, *.key or *.pem file
#   is installed;
# - sluice.pc, the unit and the configuration follow the prefix: the same
#   again with PREFIX=/opt/sluice.
set -euo pipefail
src=$1 build=$2 libdir=$3 version=$4 cc=$5
tmp=$(mktemp -d)
planted=("$src/examples/install-check-$$.token" "$src/examples/rules/install-check-$$.key"
    "$src/examples/install-check-$$.pem")
trap 'rm -rf "$tmp"; rm -f "${planted[@]}"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
secret='.*\.\(token\|key\|pem\)$'
for f in "${planted[@]}"; do
    (umask 077 && echo "planted-by-install-check" >"$f")
done

stage() { # stage DESTDIR PREFIX
    make -C "$src" --no-print-directory install BUILD="$build" DESTDIR="$1" PREFIX="$2" \
        >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "make install PREFIX=$2"; }
}

# ---------------------------------------------------------------- PREFIX=/usr
d=$tmp/usr-stage
stage "$d" /usr
lib=usr/$libdir
{
    printf '%s\n' usr/bin/sluiced usr/bin/sluice usr/include/sluice.h usr/include/sluice_adaptive.h \
        "$lib/libsluice.so" "$lib/libsluice.so.0" "$lib/libsluice.so.$version" "$lib/libsluice.a" \
        "$lib/pkgconfig/sluice.pc" usr/share/man/man1/sluice.1 usr/share/man/man8/sluiced.8 \
        usr/share/man/man5/sluice.yaml.5 usr/share/man/man5/sluice-rules.5 \
        usr/lib/systemd/system/sluiced.service etc/sluice/sluice.yaml \
        usr/share/doc/sluice/README.md usr/share/doc/sluice/CHANGELOG.md \
        usr/share/doc/sluice/LICENSE
    (cd "$src" && ls docs/*.md) | sed 's|^|usr/share/doc/sluice/|'
    (cd "$src/examples" && find . -type f -not -regex "$secret") |
        sed 's|^\./|usr/share/doc/sluice/examples/|'
    echo "$lib/sluice/sluice-redis.so"
} | sort >"$tmp/expected"
(cd "$d" && find . -type f -o -type l) | sed 's|^\./||' | sort >"$tmp/installed"
if grep -E '\.(token|key|pem)$' "$tmp/installed"; then
    fail "make install PREFIX=/usr installed the secrets above"
fi
diff -u --label expected --label installed "$tmp/expected" "$tmp/installed" ||
    fail "make install PREFIX=/usr did not install exactly the expected files"
echo "installed: $(wc -l <"$tmp/installed") files, as expected"

[[ $(readlink "$d/$lib/libsluice.so") == libsluice.so.0 ]] || fail "libsluice.so is not a link to the soname"
soname=$(readelf -d "$d/$lib/libsluice.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == libsluice.so.0 ]] || fail "soname '$soname'"
grep -qx 'ExecStart=/usr/bin/sluiced -c /etc/sluice/sluice.yaml' "$d/usr/lib/systemd/system/sluiced.service" ||
    fail "the unit's ExecStart: $(grep ExecStart= "$d/usr/lib/systemd/system/sluiced.service")"

# pkg-config sees the staged sluice.pc (and the system's yaml-0.1.pc, which
# it requires); the sysroot puts DESTDIR before every path it prints.
sys_pc=$(pkg-config --variable pc_path pkg-config)
pc() { PKG_CONFIG_SYSROOT_DIR="$1" PKG_CONFIG_LIBDIR="$1/$2:$sys_pc" pkg-config "${@:3}"; }
[[ $(pc "$d" "$lib/pkgconfig" --modversion sluice) == "$version" ]] || fail "pkg-config --modversion"
[[ $(pc "$d" "$lib/pkgconfig" --variable=prefix sluice) == *"/usr" ]] || fail "sluice.pc prefix"
cflags=$(pc "$d" "$lib/pkgconfig" --cflags sluice)
libs=$(pc "$d" "$lib/pkgconfig" --libs sluice)
static_libs=$(pc "$d" "$lib/pkgconfig" --static --libs sluice)
[[ $cflags == *"-I$d/usr/include"* ]] || fail "cflags '$cflags' do not point into the stage"
[[ $libs == *"-L$d/$lib"* ]] || fail "libs '$libs' do not point into the stage"
echo "pkg-config: $cflags $libs"

flags=(-std=c11 -Wall -Wextra -Werror "-DEXPECTED_VERSION=\"$version\"")
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
"$cc" "${flags[@]}" "$src/tests/package/embed.c" $cflags $libs -o "$tmp/embed-shared"
readelf -d "$tmp/embed-shared" | grep -q 'NEEDED.*\[libsluice.so.0\]' || fail "embed-shared does not load libsluice.so.0"
LD_LIBRARY_PATH="$d/$lib" "$tmp/embed-shared" || fail "embed-shared"
# Static: libsluice.a by name, the rest of Libs.private as pkg-config says.
# shellcheck disable=SC2086
"$cc" "${flags[@]}" "$src/tests/package/embed.c" $cflags \
    ${static_libs/-lsluice/-Wl,-Bstatic -lsluice -Wl,-Bdynamic} -o "$tmp/embed-static"
if readelf -d "$tmp/embed-static" | grep -q 'libsluice'; then fail "embed-static needs libsluice.so"; fi
"$tmp/embed-static" || fail "embed-static"
echo "embedding program: built and run, shared and static"

# ---------------------------------------------------------------- PREFIX=/opt/sluice
d=$tmp/opt-stage
stage "$d" /opt/sluice
lib=opt/sluice/$libdir
[[ $(pc "$d" "$lib/pkgconfig" --variable=prefix sluice) == *"/opt/sluice" ]] ||
    fail "sluice.pc does not follow PREFIX=/opt/sluice: $(grep prefix= "$d/$lib/pkgconfig/sluice.pc")"
[[ $(pc "$d" "$lib/pkgconfig" --libs sluice) == *"-L$d/$lib"* ]] || fail "libs under /opt/sluice"
[[ -f $d/$lib/libsluice.so.$version && -x $d/opt/sluice/bin/sluiced ]] || fail "files under /opt/sluice"
[[ -f $d/opt/sluice/etc/sluice/sluice.yaml ]] || fail "configuration not in /opt/sluice/etc/sluice"
grep -qx 'ExecStart=/opt/sluice/bin/sluiced -c /opt/sluice/etc/sluice/sluice.yaml' \
    "$d/opt/sluice/lib/systemd/system/sluiced.service" || fail "the unit does not follow PREFIX=/opt/sluice"
echo "PREFIX=/opt/sluice: sluice.pc, the unit and the configuration follow it"
