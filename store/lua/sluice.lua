-- sluice.lua - every Sluice algorithm as one atomic Redis script (issue 7).
--
-- What it does: one call decides one check - every limit of every
-- descriptor - all-or-nothing exactly as lib/limiter.c's
-- sl_limiter_check_matched does (CONTRACTS C2), then writes every changed
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
-- are whole microseconds (C1), and the C store sends each limit's
-- parameters pre-reduced (see store/redis_args.c) so that the same integer
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
-- Calling convention (store/redis_args.c builds it):
--  KEYS: one state key per distinct (descriptor key, limit).
--  ARGV[1] op: "check" | "peek" | "release"
--  ARGV[2] now in whole us, or "redis" to use Redis TIME
--  ARGV[3] extra expiry slack in ms added to every TTL
--  ARGV[4] the key prefix (for lease index keys)
--  check/peek: ARGV[5] = n items, then NF fields per item:
--    algo cost count_rejected shadow warm a b c d
--  release: KEYS = lease index keys "<prefix>:v1:lease:<h>:<id>" (each
--    holds the name of the state key it was granted on), ARGV[5] = n, then
--    the n lease ids.
-- Reply: check/peek: { now_us, then per item: verdict remaining reset_ns
--   retry_ns delay_ns lease } where lease is "" or "<h>-<id>" (h: 16 hex of
--   SHA-1 of the state key); release: { now_us, slots released }

local NF = 9
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

-- ------------------------------------------------------------ big integers
-- Non-negative integers as little-endian arrays of base-2^24 limbs; only
-- what the warm-up needs: from, add, sub, mul, cmp, divmod, to number.
local B24 = 16777216

local function big(n)
  local a = {}
  n = ex(n)
  while n > 0 do
    local q, m = divmod(n, B24)
    a[#a + 1] = m
    n = q
  end
  return a
end

local function bnorm(a)
  while #a > 0 and a[#a] == 0 do a[#a] = nil end
  return a
end

local function badd(a, b)
  local r, c = {}, 0
  for i = 1, math.max(#a, #b) do
    local s = (a[i] or 0) + (b[i] or 0) + c
    if s >= B24 then r[i], c = s - B24, 1 else r[i], c = s, 0 end
  end
  if c > 0 then r[#r + 1] = c end
  return r
end

local function bcmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
  end
  return 0
end

local function bsub(a, b) -- a >= b
  local r, c = {}, 0
  for i = 1, #a do
    local s = a[i] - (b[i] or 0) - c
    if s < 0 then r[i], c = s + B24, 1 else r[i], c = s, 0 end
  end
  return bnorm(r)
end

local function bmul(a, b)
  local r = {}
  for i = 1, #a + #b do r[i] = 0 end
  for i = 1, #a do
    local c = 0
    for j = 1, #b do
      local t = r[i + j - 1] + a[i] * b[j] + c -- < 2^49: exact
      c = math.floor(t / B24)
      r[i + j - 1] = t - c * B24
    end
    local k = i + #b
    while c > 0 do
      local t = r[k] + c
      c = math.floor(t / B24)
      r[k] = t - c * B24
      k = k + 1
    end
  end
  return bnorm(r)
end

local function bshl1(a, bit) -- 2a + bit
  local r, c = {}, bit
  for i = 1, #a do
    local t = a[i] * 2 + c
    if t >= B24 then r[i], c = t - B24, 1 else r[i], c = t, 0 end
  end
  if c > 0 then r[#r + 1] = c end
  return r
end

-- Binary long division: floor(a / b), a mod b; b > 0.
local function bdivmod(a, b)
  local q, r = {}, {}
  for i = #a, 1, -1 do
    for bitpos = 23, 0, -1 do
      local bit = math.floor(a[i] / 2 ^ bitpos) % 2
      r = bshl1(r, bit)
      local qb = 0
      if bcmp(r, b) >= 0 then r = bsub(r, b); qb = 1 end
      q = bshl1(q, qb)
    end
  end
  return bnorm(q), bnorm(r)
end

local function bnum(a) -- exact only below 2^53
  local n = 0
  for i = #a, 1, -1 do n = ex(n * B24 + a[i]) end
  return n
end

local function bzero(a) return #a == 0 end

-- ------------------------------------------- token_bucket, gcra, leaky_bucket
-- State { last_us, D }. a = p, b = r, c = capacity in requests (token_bucket:
-- burst; gcra and leaky_bucket: burst + 1), d = leaky_bucket: delay + 1.

local function bucket_at(st, now, r)
  local e = now - st[1]
  if e <= 0 then return st[2] end
  local refill = e * r -- inexact only when far above D: then it drains all
  if refill >= st[2] then return 0 end
  return st[2] - refill
end

local function bucket_report(it, D, d)
  local cap = ex(it.c * it.a)
  if D >= cap then d.rem = 0 else d.rem = (divmod(cap - D, it.a)) end
  d.reset = ns_ceil(D, it.b)
  return d
end

local function bucket_check(st, it, now, cost)
  local D = bucket_at(st, now, it.b)
  local p = it.a
  if cost == 0 then return bucket_report(it, D, dec(ALLOW)) end
  if cost > it.c then return bucket_report(it, D, dec(DENY, 0, 0, -1)) end
  local nxt = D + cost * p -- cost*p <= cap: exact; a sum above 2^53 is > cap
  if nxt <= it.c * p then
    if it.algo == 2 and nxt > it.d * p then
      local d = bucket_report(it, nxt, dec(DELAY))
      d.delay = ns_ceil(ex(nxt - it.d * p), it.b)
      return d
    end
    return bucket_report(it, nxt, dec(ALLOW))
  end
  local d = bucket_report(it, D, dec(DENY))
  d.retry = ns_ceil(D - (it.c - cost) * it.a, it.b)
  return d
end

local function bucket_commit(st, it, now, cost, d)
  local D = bucket_at(st, now, it.b) + cost * it.a
  if D > SAT then D = SAT end
  return { math.max(st[1], now), D }
end

local function bucket_fresh(now) return { now, 0 } end

-- Until whole, us, from the clamped time.
local function bucket_ttl(st, it) return ceil_div(st[2], it.b) end

-- ------------------------------------------------- token_bucket with warmup
-- C's own units (lib/algo/token_bucket.c): the next free time in ns, kept
-- as { us, ns below 1000 }, and stored permits in units of 1/(2 P_ns).
-- State { last_us, free_us, free_rem_ns, stored(string of big) }.
-- a = period_us, b = requests, c = warmup_us.

local function warm_wr(it) return bmul(big(ex(it.c * 1000)), big(it.b)) end

local function bstr(a) return table.concat(a, ',') end
local function bparse(s)
  local a = {}
  for x in string.gmatch(s, '[^,]+') do a[#a + 1] = tonumber(x) end
  return a
end

local function warm_fresh(it, now)
  return { now, now, 0, bstr(badd(warm_wr(it), warm_wr(it))) }
end

local function warm_resync(s, it, now)
  if now <= s[2] then return s end -- now (whole us) <= the free time
  local el = ex((now - s[2]) * 1000 - s[3])
  local max = badd(warm_wr(it), warm_wr(it))
  local add = bmul(big(el), big(ex(2 * it.b)))
  local b = badd(bparse(s[4]), add)
  if bcmp(b, max) > 0 then b = max end
  return { s[1], now, 0, bstr(b) }
end

local function warm_wait(it, stored, cost)
  local wr = warm_wr(it)
  local need = bmul(big(cost), big(ex(2000 * it.a)))
  local spend = bcmp(need, stored) < 0 and need or stored
  local above = bcmp(stored, wr) > 0 and bsub(stored, wr) or {}
  local ta = bcmp(spend, above) < 0 and spend or above
  local quad = bmul(ta, bsub(badd(stored, bsub(stored, ta)), wr))
  local lin = bsub(need, ta)
  local two_r = big(ex(2 * it.b))
  local whole, rem = bdivmod(lin, two_r)
  local frac = badd(bmul(rem, wr), quad)
  local den = bmul(bmul(big(2), wr), big(it.b))
  local q, m = bdivmod(frac, den)
  local w = badd(whole, q)
  if not bzero(m) then w = badd(w, big(1)) end
  return w, spend
end

local function warm_reserve(s, it, now, cost)
  s = warm_resync(s, it, now)
  local wait, spent = warm_wait(it, bparse(s[4]), cost)
  local q, m = bdivmod(badd(wait, big(s[3])), big(1000))
  return { s[1], ex(s[2] + bnum(q)), bnum(m), bstr(bsub(bparse(s[4]), spent)) }
end

-- From `now_us` until the stored permits are back at the maximum, as
-- whole us and ns (us < 0: already whole).
local function warm_whole(s, it, now)
  local missing = bsub(badd(warm_wr(it), warm_wr(it)), bparse(s[4]))
  local two_r = big(ex(2 * it.b))
  local q, m = bdivmod(missing, two_r)
  local rest = bnum(q) + (bzero(m) and 0 or 1) + s[3]
  local rq, rm = divmod(rest, 1000)
  return ex(s[2] - now + rq), rm
end

local function warm_reset(s, it, now)
  local us, f = warm_whole(s, it, now)
  if us < 0 then return 0 end
  return ns_val(us, f)
end

local function warm_check(st, it, now, cost)
  local t = math.max(now, st[1])
  local d
  local after = st
  local free = st[2] < t or (st[2] == t and st[3] == 0)
  if cost == 0 or free then
    d = dec(ALLOW)
    if cost ~= 0 then after = warm_reserve(st, it, t, cost) end
    d.rem = (after[2] < t or (after[2] == t and after[3] == 0)) and 1 or 0
  else
    d = dec(DENY, 0)
    d.retry = ns_val(st[2] - t, st[3])
  end
  d.reset = warm_reset(after, it, t)
  return d
end

local function warm_commit(st, it, now, cost, d)
  local t = math.max(now, st[1])
  local s = warm_reserve(st, it, t, cost)
  s[1] = t
  return s
end

local function warm_ttl(st, it)
  local us, f = warm_whole(st, it, st[1])
  return us + (f > 0 and 1 or 0)
end

-- ------------------------------------------------------------ fixed_window
-- State { last_us, count }; a = period_us, b = requests.

local function fw_view(st, it, now)
  local t = now
  if st then t = math.max(now, st[1]) end
  local w = divmod(t, it.a)
  local cur = 0
  if st and st[2] > 0 and divmod(st[1], it.a) == w then cur = st[2] end
  return t, cur, ex((w + 1) * it.a - t)
end

local function fw_check(st, it, now, cost)
  local _, cur, to_end = fw_view(st, it, now)
  local left = cur >= it.b and 0 or it.b - cur
  if cost <= left then
    return dec(ALLOW, left - cost, (cur > 0 or cost > 0) and ns_val(to_end, 0) or 0)
  end
  local d = dec(DENY, left, cur > 0 and ns_val(to_end, 0) or 0)
  d.retry = cost > it.b and -1 or ns_val(to_end, 0)
  return d
end

local function fw_commit(st, it, now, cost, d)
  local t, cur = fw_view(st, it, now)
  local s = { t, math.min(cur + cost, SAT) }
  return s
end

local function fw_ttl(st, it)
  if st[2] == 0 then return nil end
  local w = divmod(st[1], it.a)
  return ex((w + 1) * it.a - st[1])
end

-- ---------------------------------------------------------- sliding_window
-- State { last_us, cur, prev }; a = period_us, b = requests.

local function sw_view(st, it, now)
  local v = { t = now, cur = 0, prev = 0 }
  if st then v.t = math.max(now, st[1]) end
  local w, e = divmod(v.t, it.a)
  v.e = e
  if st then
    local wl = divmod(st[1], it.a)
    if w == wl then
      v.cur, v.prev = st[2], st[3]
    elseif w - wl == 1 then
      v.prev = st[2]
    end
  end
  return v
end

-- Products of counts and durations: plain numbers while every one stays
-- below 2^52 (the common case), exact big integers beyond (e.g. a million
-- requests a day: requests * period_us is then about 2^56).
local function sw_small(v, it, cost)
  return (math.max(it.b, v.cur + cost, v.prev) + 1) * it.a < SAT
end

-- prev * (P - e) <= (requests - need) * P: the window has room for `need`.
local function sw_fits(v, it, need, small)
  if need > it.b then return false end
  if small then return v.prev * (it.a - v.e) <= (it.b - need) * it.a end
  return bcmp(bmul(big(v.prev), big(it.a - v.e)), bmul(big(it.b - need), big(it.a))) <= 0
end

-- floor(((requests - cur) * P - prev * (P - e)) / P), or 0.
local function sw_remaining(v, it, small)
  if v.cur >= it.b then return 0 end
  if small then
    local room = (it.b - v.cur) * it.a - v.prev * (it.a - v.e)
    if room <= 0 then return 0 end
    return (divmod(room, it.a))
  end
  local cap, used = bmul(big(it.b - v.cur), big(it.a)), bmul(big(v.prev), big(it.a - v.e))
  if bcmp(cap, used) <= 0 then return 0 end
  return bnum((bdivmod(bsub(cap, used), big(it.a))))
end

local function sw_reset(v, it)
  local left = it.a - v.e
  if v.cur > 0 then left = left + it.a elseif v.prev == 0 then return 0 end
  return ns_val(left, 0)
end

-- ceil(1000 * x / by) as ns, x a number or a big integer.
local function ns_ratio(x, by, small)
  if small then
    local q, m = divmod(x, by)
    return q, ceil_div(ex(1000 * m), by)
  end
  local q, m = bdivmod(bmul(x, big(1000)), big(by))
  return 0, bnum(q) + (bzero(m) and 0 or 1)
end

local function sw_retry(v, it, cost, small)
  local need = v.cur + cost
  local q, f
  if need <= it.b then -- within this window, as prev's weight decays
    local excess
    if small then
      excess = ex(v.prev * (it.a - v.e) - (it.b - need) * it.a)
    else
      excess = bsub(bmul(big(v.prev), big(it.a - v.e)), bmul(big(it.b - need), big(it.a)))
    end
    q, f = ns_ratio(excess, v.prev, small)
    return ns_val(q, f)
  end
  local x = small and ex((need - it.b) * it.a) or bmul(big(need - it.b), big(it.a))
  q, f = ns_ratio(x, v.cur, small)
  return ns_val(it.a - v.e + q, f)
end

local function sw_check(st, it, now, cost)
  local v = sw_view(st, it, now)
  local small = sw_small(v, it, cost)
  local need = v.cur + cost
  if cost == 0 or sw_fits(v, it, need, small) then
    v.cur = need
    return dec(ALLOW, sw_remaining(v, it, small), sw_reset(v, it))
  end
  local d = dec(DENY, sw_remaining(v, it, small), sw_reset(v, it))
  d.retry = cost > it.b and -1 or sw_retry(v, it, cost, small)
  return d
end

local function sw_commit(st, it, now, cost, d)
  local v = sw_view(st, it, now)
  return { v.t, math.min(v.cur + cost, SAT), v.prev }
end

local function sw_ttl(st, it)
  if st[2] == 0 and st[3] == 0 then return nil end
  local w = divmod(st[1], it.a)
  local e = (w + 1) * it.a
  if st[2] > 0 then e = e + it.a end
  return ex(e - st[1])
end

-- ------------------------------------------------------------- sliding_log
-- State: runs { t1, n1, t2, n2, ... } oldest first, n entries logged at t;
-- at most `requests` entries in all. a = period_us, b = requests,
-- c = min_interval_us.

local function sg_view(st, it, now)
  local v = { t = now, live = 0, first = nil, runs = st or {} }
  local runs = v.runs
  if #runs > 0 then v.t = math.max(now, runs[#runs - 1]) end
  for i = 1, #runs, 2 do
    if runs[i] + it.a > v.t then
      v.first = v.first or i
      v.live = v.live + runs[i + 1]
    end
  end
  return v
end

-- The k-th (0-based) live entry's time.
local function sg_entry(v, k)
  local runs = v.runs
  for i = v.first, #runs, 2 do
    if k < runs[i + 1] then return runs[i] end
    k = k - runs[i + 1]
  end
  error('sliding_log: entry out of range')
end

-- The wait (us) the newest live request imposes with min_interval.
local function sg_spacing(v, it)
  if it.c == 0 or v.live == 0 then return 0 end
  local untl = v.runs[#v.runs - 1] + math.min(it.c, it.a)
  return untl > v.t and untl - v.t or 0
end

local function sg_reset(v, it)
  if v.live == 0 then return 0 end
  return ns_val((v.runs[#v.runs - 1] + it.a - v.t), 0)
end

local function sg_check(st, it, now, cost)
  local v = sg_view(st, it, now)
  local free = it.b - v.live
  local spacing = sg_spacing(v, it)
  if cost == 0 or (cost <= free and spacing == 0) then
    if cost == 0 then
      return dec(ALLOW, spacing > 0 and 0 or free, sg_reset(v, it))
    end
    return dec(ALLOW, it.c > 0 and 0 or free - cost, ns_val(it.a, 0))
  end
  local d = dec(DENY, spacing > 0 and 0 or free, sg_reset(v, it))
  if cost > it.b then
    d.retry = -1
    return d
  end
  local wait = spacing
  if v.live > it.b - cost then
    local k = v.live - (it.b - cost) - 1
    wait = math.max(spacing, sg_entry(v, k) + it.a - v.t)
  end
  d.retry = ns_val(wait, 0)
  return d
end

local function sg_commit(st, it, now, cost, d)
  local v = sg_view(st, it, now)
  local runs, out = v.runs, {}
  if v.first then
    for i = v.first, #runs do out[#out + 1] = runs[i] end
  end
  local n = math.min(cost, it.b)
  if #out > 0 and out[#out - 1] == v.t then
    out[#out] = out[#out] + n
  else
    out[#out + 1] = v.t
    out[#out + 1] = n
  end
  -- keep the newest `requests` entries
  local total = 0
  for i = 2, #out, 2 do total = total + out[i] end
  local drop = total - it.b
  local j = 1
  while drop > 0 do
    if out[j + 1] <= drop then
      drop = drop - out[j + 1]
      j = j + 2
    else
      out[j + 1] = out[j + 1] - drop
      drop = 0
    end
  end
  local res = {}
  for i = j, #out do res[#res + 1] = out[i] end
  return res
end

local function sg_ttl(st, it)
  if #st == 0 then return nil end
  return it.a -- the newest entry was logged at the state's clamped time
end

-- ------------------------------------------------------------- concurrency
-- State { base_us, next_k, last_us, k1, exp1_us, slots1, ... }: lease id
-- = base_us * 1000 + k (C seeds next_id with the creation time in ns).
-- a = requests, b = lease_us. last_us = -1: none yet.

local function cc_id(st, k)
  local hi, lo = divmod(k, 1000)
  return string.format('%.0f%03d', st[1] + hi, lo)
end

local function cc_view(st, now)
  local v = { t = math.max(now, st[3]), first = nil, held = 0 }
  for i = 4, #st, 3 do
    if st[i + 1] > v.t then
      v.first = v.first or i
      v.held = v.held + st[i + 2]
    end
  end
  return v
end

local function cc_fresh(now) return { now, 0, -1 } end

local function cc_reset(st, v)
  if v.first == nil then return 0 end
  return ns_val((st[#st - 1] - v.t), 0)
end

local function cc_check(st, it, now, cost)
  local v = cc_view(st, now)
  local free = v.held >= it.a and 0 or it.a - v.held
  if cost <= free then
    return dec(ALLOW, free - cost, cost > 0 and ns_val(it.b, 0) or cc_reset(st, v))
  end
  local d = dec(DENY, free, cc_reset(st, v))
  if cost > it.a then
    d.retry = -1
    return d
  end
  local must, freed = v.held - (it.a - cost), 0
  for i = v.first, #st, 3 do
    freed = freed + st[i + 2]
    if freed >= must then
      d.retry = ns_val((st[i + 1] - v.t), 0)
      return d
    end
  end
  return d
end

local function cc_compact(st, v)
  local s = { st[1], st[2], v.t }
  if v.first then
    for i = v.first, #st do s[#s + 1] = st[i] end
  end
  return s
end

local function cc_commit(st, it, now, cost, d)
  if d.v == DENY then return st end
  local s = cc_compact(st, cc_view(st, now))
  if (#s - 3) / 3 >= it.a then return s end
  s[#s + 1] = s[2]
  s[#s + 1] = ex(s[3] + it.b)
  s[#s + 1] = cost
  d.lease = cc_id(s, s[2])
  s[2] = s[2] + 1
  return s
end

local function cc_ttl(st, it)
  if #st == 3 then return nil end
  return ex(st[#st - 1] - st[3])
end

local function cc_release(st, now, id)
  local s = cc_compact(st, cc_view(st, now))
  for i = 4, #s, 3 do
    if cc_id(s, s[i]) == id then
      for _ = 1, 3 do table.remove(s, i) end
      return s, 1
    end
  end
  return s, 0
end

-- ------------------------------------------------------------- dispatch

local ALGOS = {
  [0] = { check = bucket_check, commit = bucket_commit, ttl = bucket_ttl, refresh = true },
  [1] = { check = bucket_check, commit = bucket_commit, ttl = bucket_ttl, refresh = true },
  [2] = { check = bucket_check, commit = bucket_commit, ttl = bucket_ttl, refresh = true },
  [3] = { check = fw_check, commit = fw_commit, ttl = fw_ttl, refresh = true },
  [4] = { check = sw_check, commit = sw_commit, ttl = sw_ttl, refresh = true },
  [5] = { check = sg_check, commit = sg_commit, ttl = sg_ttl, refresh = true },
  [6] = { check = cc_check, commit = cc_commit, ttl = cc_ttl },
}
local WARM = { check = warm_check, commit = warm_commit, ttl = warm_ttl, refresh = true }

local function ops_of(it)
  if it.algo == 0 and it.warm == 1 then return WARM end
  local o = ALGOS[it.algo]
  if o == nil then error('SLUICE_ALGO unknown algorithm ' .. tostring(it.algo)) end
  return o
end

-- The state a never-seen key starts with (nil: "nothing recorded").
local function fresh(it, now)
  if it.algo == 0 and it.warm == 1 then return warm_fresh(it, now) end
  if it.algo <= 2 then return bucket_fresh(now) end
  if it.algo == 6 then return cc_fresh(now) end
  return nil
end

local function load(key, it, now)
  local raw = redis.call('GET', key)
  if raw then return cmsgpack.unpack(raw), false end
  return fresh(it, now), true
end

local function item_at(base)
  local n = function(k) return tonumber(ARGV[base + k]) end
  return {
    algo = n(0), cost = n(1), cr = n(2) == 1, shadow = n(3) == 1, warm = n(4),
    a = n(5), b = n(6), c = n(7), d = n(8),
  }
end

local function now_us()
  if ARGV[2] == 'redis' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return tonumber(ARGV[2])
end

-- Write a state with its expiry in one command (never a key without an
-- expiry: envoyproxy/ratelimit#329). A state is kept `slack` ms past the
-- time it is whole, as the memory table keeps a drained entry until it
-- sweeps it: it still clamps a clock that steps back (C1).
local function store(key, it, st, slack_ms)
  if st == nil then
    redis.call('DEL', key)
    return
  end
  local ttl_us = ops_of(it).ttl(st, it) or 0
  if ttl_us < 0 then ttl_us = 0 end
  redis.call('SET', key, cmsgpack.pack(st), 'PX', ceil_div(ttl_us, 1000) + slack_ms)
end

local function lease_index(key, id)
  local h = string.sub(redis.sha1hex(key), 1, 16)
  return h, ARGV[4] .. ':v1:lease:' .. h .. ':' .. id
end

local function run_check(now, peek)
  local n = tonumber(ARGV[5])
  local items, states, decs, absent = {}, {}, {}, {}
  local denied = false
  for i = 1, n do
    local it = item_at(5 + (i - 1) * NF + 1)
    if peek then it.cost = 0 end
    items[i] = it
    states[i], absent[i] = load(KEYS[i], it, now)
    decs[i] = ops_of(it).check(states[i], it, now, it.cost)
    if decs[i].v == DENY and not it.shadow then denied = true end
  end
  -- Phase 2: every new state computed before anything is written, so a
  -- range error leaves Redis untouched. A counted denial (count_rejected)
  -- reports the state with it recorded, as every C commit() does.
  local writes = {}
  for i = 1, n do
    local it, d = items[i], decs[i]
    if it.cost > 0 then
      local self_deny = d.v == DENY
      local ops = ops_of(it)
      if it.cr or (not denied and not self_deny) then
        writes[i] = ops.commit(states[i], it, now, it.cost, d)
        if self_deny and ops.refresh then
          local after = ops.check(writes[i], it, now, it.cost)
          d.rem, d.reset, d.retry = after.rem, after.reset, after.retry
        end
      elseif denied and not self_deny then
        decs[i] = ops.check(states[i], it, now, 0)
      end
      -- The memory store creates the entry of every limit a request costs
      -- something on, admitted or not; its creation time clamps later times.
      if writes[i] == nil and absent[i] then writes[i] = states[i] end
    end
  end
  local slack = tonumber(ARGV[3])
  for i = 1, n do
    if writes[i] ~= nil then store(KEYS[i], items[i], writes[i], slack) end
    if decs[i].lease ~= '' then
      local h, idx = lease_index(KEYS[i], decs[i].lease)
      redis.call('SET', idx, KEYS[i], 'PX', ceil_div(items[i].b, 1000) + slack)
      decs[i].lease = h .. '-' .. decs[i].lease
    end
  end
  local out = { now }
  for i = 1, n do
    local d = decs[i]
    out[#out + 1] = d.v
    out[#out + 1] = d.rem
    out[#out + 1] = d.reset
    out[#out + 1] = d.retry
    out[#out + 1] = d.delay
    out[#out + 1] = d.lease
  end
  return out
end

local function run_release(now)
  local released = 0
  for j = 1, tonumber(ARGV[5]) do
    local key = redis.call('GET', KEYS[j])
    local raw = key and redis.call('GET', key)
    if raw then
      local s, found = cc_release(cmsgpack.unpack(raw), now, ARGV[5 + j])
      if found == 1 then
        store(key, { algo = 6 }, s, tonumber(ARGV[3]))
        redis.call('DEL', KEYS[j])
        released = released + 1
      end
    end
  end
  return { now, released }
end

local function main()
  local now = now_us()
  if ARGV[1] == 'check' then return run_check(now, false) end
  if ARGV[1] == 'peek' then return run_check(now, true) end
  if ARGV[1] == 'release' then return run_release(now) end
  error('SLUICE_OP unknown op')
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' then return res end -- a Redis error from redis.call
local msg = tostring(res)
local code = string.match(msg, '(SLUICE_%u+.*)$') or msg
return redis.error_reply(code)
