#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# run.sh BUILD_DIR - `make run`: start sluiced with the example configuration
# in the foreground; until the daemon exists, list what was built.
set -euo pipefail
build=${1:-build}
if [[ -x "$build/server/sluiced" && -f examples/sluice.yaml ]]; then
    exec "$build/server/sluiced" -c examples/sluice.yaml
fi
echo "sluice: built:"
find "$build" -maxdepth 3 -type f \( -name 'libsluice.a' -o -name sluice -o -name sluiced \) -printf '  %p\n'
