-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 40_sliding_window.lua - Cloudflare's sliding window counter with N
-- sub-windows (lib/algo/sliding_window.c): plain numbers while products
-- stay below 2^52, big integers beyond.

-- sw_ops(): makes the ops of sliding_window and returns them; 90_main.lua
-- calls it on first use in a call only (the chunk runs on every EVALSHA,
-- and making every algorithm's closures each time was most of a check's
-- cost).
local function sw_ops()
  local B = big_lib()
  local big, badd, bcmp, bsub, bmul = B.big, B.badd, B.bcmp, B.bsub, B.bmul
  local bdivmod, bnum, bzero = B.bdivmod, B.bnum, B.bzero

  -- ---------------------------------------------------------- sliding_window
  -- State { last_us, c0, c1, ..., cN }: the counts of last_us's sub-window
  -- and of the N before it, newest first (N = 1: { last_us, cur, prev }).
  -- a = period_us, b = requests, c = N (buckets; the C store checks that
  -- a / c is whole).

  local function sw_count(v, j)
    if v.st == nil or j < v.shift then return 0 end
    return v.st[2 + j - v.shift]
  end

  -- The state seen at `now`: sub-window s, elapsed e, the shift of the
  -- counts, and their prefix sums p[i] = count(0) + ... + count(i - 1),
  -- saturated at 2^52 (they are only compared with requests < 2^52, so a
  -- saturated sum is simply "too many", and the sums stay exact).
  local function sw_view(st, it, now)
    local n = it.c
    if n == nil or n < 1 then n = 1 end
    local s = it.a / n
    local v = { t = now, n = n, s = s, st = st, shift = n + 1 }
    if st then v.t = math.max(now, st[1]) end
    local w, e = divmod(v.t, s)
    v.e = e
    if st then
      local d = w - divmod(st[1], s)
      if d <= n then v.shift = d end
    end
    local p = { [0] = 0 }
    for j = 0, n - 1 do p[j + 1] = math.min(p[j] + sw_count(v, j), SAT) end
    v.p, v.full, v.cur, v.old = p, p[n], sw_count(v, 0), sw_count(v, n)
    return v
  end

  -- Products of counts and durations: plain numbers while every one stays
  -- below 2^52 (the common case), exact big integers beyond (e.g. a million
  -- requests a day: requests * period_us is then about 2^56).
  local function sw_small(v, it, cost)
    return (math.max(it.b, v.full + cost, v.old) + 1) * v.s < SAT
  end

  -- old * (S - e) <= (requests - need) * S: the window has room for `need`.
  local function sw_fits(v, it, need, small)
    if need > it.b then return false end
    if small then return v.old * (v.s - v.e) <= (it.b - need) * v.s end
    return bcmp(bmul(big(v.old), big(v.s - v.e)), bmul(big(it.b - need), big(v.s))) <= 0
  end

  -- floor(((requests - full) * S - old * (S - e)) / S), or 0.
  local function sw_remaining(v, it, full, small)
    if full >= it.b then return 0 end
    if small then
      local room = (it.b - full) * v.s - v.old * (v.s - v.e)
      if room <= 0 then return 0 end
      return (divmod(room, v.s))
    end
    local cap, used = bmul(big(it.b - full), big(v.s)), bmul(big(v.old), big(v.s - v.e))
    if bcmp(cap, used) <= 0 then return 0 end
    return bnum((bdivmod(bsub(cap, used), big(v.s))))
  end

  -- Until every count has aged out: the newest non-zero one, j sub-windows
  -- back, is weighted for the last time N sub-windows after its own.
  local function sw_reset(v, cur_added)
    for j = 0, v.n do
      if sw_count(v, j) > 0 or (j == 0 and cur_added) then
        return ns_val((v.n + 1 - j) * v.s - v.e, 0)
      end
    end
    return 0
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

  -- k sub-windows from now the counts 0..N-1-k count in full and N-k is
  -- weighted; the first k whose full ones leave room for `cost` is where it
  -- fits, once the weighted one has decayed enough.
  local function sw_retry(v, it, cost, small)
    for k = 0, v.n do
      local old, need = sw_count(v, v.n - k), v.p[v.n - k] + cost
      if need <= it.b then
        local q, f
        if k == 0 then
          local excess
          if small then
            excess = ex(old * (v.s - v.e) - (it.b - need) * v.s)
          else
            excess = bsub(bmul(big(old), big(v.s - v.e)), bmul(big(it.b - need), big(v.s)))
          end
          q, f = ns_ratio(excess, old, small)
          return ns_val(q, f)
        end
        local base = k * v.s - v.e
        if old <= it.b - need then return ns_val(base, 0) end
        local x
        if small then x = ex((old - (it.b - need)) * v.s)
        else x = bmul(big(old - (it.b - need)), big(v.s)) end
        q, f = ns_ratio(x, old, small)
        return ns_val(base + q, f)
      end
    end
    return -1
  end

  local function sw_check(st, it, now, cost)
    local v = sw_view(st, it, now)
    local small = sw_small(v, it, cost)
    local need = v.full + cost
    if cost == 0 or sw_fits(v, it, need, small) then
      return dec(ALLOW, sw_remaining(v, it, need, small), sw_reset(v, cost > 0))
    end
    local d = dec(DENY, sw_remaining(v, it, v.full, small), sw_reset(v, false))
    d.retry = cost > it.b and -1 or sw_retry(v, it, cost, small)
    return d
  end

  local function sw_commit(st, it, now, cost, d)
    local v = sw_view(st, it, now)
    local out = { v.t }
    for j = 0, v.n do out[2 + j] = sw_count(v, j) end
    out[2] = math.min(out[2] + cost, SAT)
    return out
  end

  local function sw_ttl(st, it)
    local n = it.c
    if n == nil or n < 1 then n = 1 end
    local s = it.a / n
    for j = 0, n do
      if (st[2 + j] or 0) > 0 then
        return ex((divmod(st[1], s) + n + 1 - j) * s - st[1])
      end
    end
    return nil
  end

  return {
    check = sw_check, commit = sw_commit, ttl = sw_ttl, refresh = true,
  }
end
