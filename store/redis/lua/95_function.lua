-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors

-- 95_function.lua - the tail of the Redis Functions library (FUNCTION LOAD,
-- then FCALL per call): the library's chunk runs once, when it is loaded,
-- so every definition above is made once and each algorithm's closures are
-- kept after their first use (90_main.lua's `loaded`), not made per call.
-- The library and the function carry the build's name (@NAME@: the version
-- and a hash of this text, store/redis/lua/embed.cmake), so sluiced builds
-- with different scripts never overwrite each other's code in one Redis.
redis.register_function('@NAME@', function(keys, args) return run(keys, args) end)
