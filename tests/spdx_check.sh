#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# spdx_check.sh SOURCE_DIR - every source file git tracks starts with the
# SPDX licence header (SPDX-License-Identifier: BSD-2-Clause, Copyright (c)
# The Sluice authors). Fails listing the files without it; scripts/spdx.sh
# adds it, and decides which files are source files.
set -euo pipefail
exec "$1/scripts/spdx.sh" --check
