-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 25_warmup.lua - token_bucket with warmup: Guava SmoothWarmingUp in C's
-- own units (lib/algo/token_bucket.c) with exact big integers. It does
-- not do the plain bucket (20_buckets.lua).

-- warm_ops(): makes the ops of the warm-up token bucket and returns them;
-- 90_main.lua calls it on first use in a call only (the chunk runs on every
-- EVALSHA, and making every algorithm's closures each time was most of a
-- check's cost).
local function warm_ops()
  local B = big_lib()
  local big, badd, bcmp, bsub, bmul = B.big, B.badd, B.bcmp, B.bsub, B.bmul
  local bdivmod, bnum, bzero = B.bdivmod, B.bnum, B.bzero

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
    -- the idle time in ns may pass 2^53 (months): kept as a big integer
    local el = bsub(bmul(big(now - s[2]), big(1000)), big(s[3]))
    local max = badd(warm_wr(it), warm_wr(it))
    local add = bmul(el, big(ex(2 * it.b)))
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

  return {
    check = warm_check, commit = warm_commit, ttl = warm_ttl, fresh = warm_fresh, refresh = true,
  }
end
