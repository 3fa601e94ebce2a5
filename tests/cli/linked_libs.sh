#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# linked_libs.sh SLUICE - the `sluice` binary links none of the daemon's
# runtime libraries: `sluice check -c` runs the daemon's configuration check
# (sluiced_conf), not its event loop, protocols or stores, so the command
# line (and its Debian package) needs no io_uring, HTTP/2, protobuf, Redis
# client, libuv or systemd library.
set -u
sluice=$1
forbidden="liburing libnghttp2 libprotobuf-c libhiredis libuv libsystemd"
needed=$(objdump -p "$sluice" | awk '$1 == "NEEDED" {print $2}')
if [ -z "$needed" ]; then
    echo "FAIL: objdump lists no NEEDED library for $sluice (not a dynamic executable?)" >&2
    exit 1
fi
bad=0
for lib in $forbidden; do
    for n in $needed; do
        case "$n" in
        "$lib".so*)
            echo "FAIL: $sluice links $n" >&2
            bad=1
            ;;
        esac
    done
done
[ "$bad" -eq 0 ] || exit 1
echo "ok: sluice links only:" $needed
