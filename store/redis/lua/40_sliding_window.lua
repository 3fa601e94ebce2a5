-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 40_sliding_window.lua - Cloudflare's sliding window counter
-- (lib/algo/sliding_window.c): plain numbers while products stay below
-- 2^52, big integers beyond.

-- sw_ops(): makes the ops of sliding_window and returns them; 90_main.lua
-- calls it on first use in a call only (the chunk runs on every EVALSHA,
-- and making every algorithm's closures each time was most of a check's
-- cost).
local function sw_ops()
  local B = big_lib()
  local big, badd, bcmp, bsub, bmul = B.big, B.badd, B.bcmp, B.bsub, B.bmul
  local bdivmod, bnum, bzero = B.bdivmod, B.bnum, B.bzero

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

  return {
    check = sw_check, commit = sw_commit, ttl = sw_ttl, refresh = true,
  }
end
