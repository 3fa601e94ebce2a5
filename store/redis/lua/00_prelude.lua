-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- sluice.lua (00_prelude.lua) - every Sluice algorithm as one atomic Redis
-- script, written in parts store/redis/lua/NN_*.lua that the build
-- concatenates in name order into two texts that differ only by their
-- tail: the script for EVALSHA (95_eval.lua) and the Redis Functions
-- library for FCALL (95_function.lua), see embed.cmake.
--
-- What it does: one call decides one check - every limit of every
-- descriptor - all-or-nothing exactly as lib/limiter.c's
-- sl_limiter_check_matched does (docs/contracts.md §Decisions), then writes every changed
-- state with its expiry in the same SET (PX), so a key can never be left
-- without an expiry (envoyproxy/ratelimit#329). It also peeks (cost 0, no
-- write), and releases concurrency leases.
--
-- What it deliberately does not do: rank limits into descriptor statuses,
-- name limits or build lease tokens (the C store does that from the
-- per-limit decisions returned here), or read any clock except Redis TIME
-- when the caller asks for it ("redis" instead of a time).
--
-- Arithmetic: Lua numbers are doubles, exact for integers below 2^53. The C
-- algorithms (lib/algo/*.c) work in ns and 128-bit fixed point; here times
-- are whole microseconds (contracts §Time), and the C store sends each limit's
-- parameters pre-reduced (see store/redis/redis_plan.c) so that the same integer
-- relations hold with smaller numbers:
--  * token_bucket, gcra, leaky_bucket: C keeps the deficit/debt/water D_c in
--    units of 1/requests ns. With whole-us times and a whole-us period p_us,
--    D_c = 1000 * g * D where g = gcd(p_us, requests), p = p_us/g,
--    r = requests/g, and D is what this script keeps. Every C comparison
--    (D_c + cost*P_c <= cap_c) is the same comparison of D, and every
--    duration ceil(D_c / requests) ns is ceil(1000 * D / r) ns.
--  * windows, log, concurrency: C's ns times are 1000 * our us times, and
--    every relation is linear in them.
--  * the warm-up token bucket keeps C's own units with exact big-integer
--    arithmetic (the `big` helpers) because its wait involves products of
--    two state-sized numbers.
-- Every product that could leave the exact range goes through ex(), which
-- aborts the script with SLUICE_RANGE before anything is written: the store
-- turns that into SL_ERANGE; the script never answers inexactly. The only
-- deliberate difference from C: a debt grown by count_rejected saturates at
-- 2^52 units here (C: INT64_MAX ns).
--
-- Calling convention (store/redis/redis_plan.c builds it; the Redis module,
-- redis-module/, takes the same arguments without ARGV[1], the op being in
-- its command's name, SLUICE.CHECK etc.). Few arguments, because Redis
-- makes an object of each one (a third of a one-limit call's cost was
-- argument objects when each field was one):
--  KEYS: one state key per distinct (descriptor key, limit); release: the
--        lease index keys "<prefix>:v1:lease:<h>:<id>", each holding the
--        name of the state key it was granted on.
--  ARGV[1] op: "check" | "peek" | "refund" | "reset" (delete the keys,
--          announce them on "<prefix>:v1:reset", then peek) | "release"
--  ARGV[2] now in whole us, or "redis" to use Redis TIME
--  ARGV[3] the settings "<slack>,<prefix>": slack, ms added to every TTL;
--          the key prefix (for lease index keys; on Redis Cluster
--          "<prefix>{T}", T a short tag of the call's slot, redis_route.c)
--  ARGV[3 + i] for KEYS[i]: "algo,cost,cr,shadow,warm,a,b,c,d" (integers);
--          release: the lease id.
-- Reply: check/peek/reset: { now_us, then per item: verdict remaining
--   reset_ns retry_ns delay_ns lease } where lease is "" or "<h>-<id>" (h:
--   16 hex of SHA-1 of the state key); release: { now_us, slots released };
--   refund: { now_us, items refunded }

local LIM = 9007199254740992 -- 2^53
local SAT = 4503599627370496 -- 2^52: saturation of a counted debt
local ALLOW, DELAY, DENY = 0, 1, 2

local function ex(x)
  if x >= LIM or x <= -LIM or x ~= x then
    error('SLUICE_RANGE')
  end
  return x
end

-- floor(a / b), a mod b for integers a >= 0 (< 2^53), b > 0.
local function divmod(a, b)
  local q = math.floor(a / b)
  local m = a - q * b
  if m < 0 then
    q, m = q - 1, m + b
  elseif m >= b then
    q, m = q + 1, m - b
  end
  return q, m
end

local function ceil_div(a, b)
  local q, m = divmod(a, b)
  if m > 0 then q = q + 1 end
  return q
end

-- A duration of us microseconds and f ns (0 <= f <= 1000) in ns: a number
-- when exact, else its decimal string (the C side reads both), so
-- durations up to 2^53 us (285 years) stay exact.
local function ns_val(us, f)
  us = us + math.floor(f / 1000)
  f = f % 1000
  if us < 9007199254740 then return us * 1000 + f end
  return string.format('%.0f%03d', ex(us), f)
end

-- ceil(1000 * d / r): a duration in ns from d units of 1/r us.
local function ns_ceil(d, r)
  local q, m = divmod(d, r)
  return ns_val(q, ceil_div(ex(1000 * m), r))
end

local function dec(v, rem, reset, retry, delay)
  return { v = v, rem = rem, reset = reset, retry = retry or 0, delay = delay or 0, lease = '' }
end
