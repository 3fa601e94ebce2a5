-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors

-- 95_eval.lua - the tail of the script loaded with SCRIPT LOAD and called
-- with EVALSHA: its chunk runs on every call (so each algorithm's closures
-- are made on first use in the call, 90_main.lua), with KEYS and ARGV as
-- globals.
return run(KEYS, ARGV)
