#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# run.sh BUILD_DIR - `make run`: start sluiced with the example configuration
# in the foreground; until the daemon exists, list what was built.
#
# The configuration and the rules are read through links in BUILD_DIR/run,
# so that what the instance writes beside its configuration (the admin
# token) stays in the build tree: examples/ is installed as documentation,
# and a live token there would be shipped.
set -euo pipefail
build=${1:-build}
if [[ -x "$build/server/sluiced" && -f examples/sluice.yaml ]]; then
    run=$build/run
    mkdir -p "$run"
    ln -sfn "$PWD/examples/sluice.yaml" "$run/sluice.yaml"
    ln -sfn "$PWD/examples/rules" "$run/rules"
    # The admin endpoints always need a token: sluiced creates one at first
    # start beside the configuration (mode 0600) and reads it afterwards.
    token=$run/admin.token
    echo "sluice: admin token in $token (created at first start); for example:" >&2
    echo "  curl -H \"Authorization: Bearer \$(cat $token)\" http://127.0.0.1:6390/v1/config" >&2
    exec "$build/server/sluiced" -c "$run/sluice.yaml"
fi
echo "sluice: built:"
find "$build" -maxdepth 3 -type f \( -name 'libsluice.a' -o -name sluice -o -name sluiced \) -printf '  %p\n'
