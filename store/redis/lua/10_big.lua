-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 10_big.lua - exact non-negative big integers (base 2^24 limbs) for the
-- few products that pass 2^53: the warm-up token bucket's waits and large
-- sliding windows. Only what those need; no negative numbers, no speed.

-- big_lib(): makes the big-integer helpers and returns them; 90_main.lua
-- calls it on first use in a call only (the chunk runs on every EVALSHA,
-- and making every algorithm's closures each time was most of a check's
-- cost).
local function big_lib()
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

  return {
    big = big, badd = badd, bcmp = bcmp, bsub = bsub, bmul = bmul,
    bdivmod = bdivmod, bnum = bnum, bzero = bzero,
  }
end
