-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 20_buckets.lua - token_bucket (plain), gcra and leaky_bucket: one
-- bucket of reduced units (00_prelude.lua says how they map to C's). It
-- does not do the warm-up bucket (25_warmup.lua).

-- bucket_ops(): makes the ops of token_bucket, gcra and leaky_bucket and
-- returns them; 90_main.lua calls it on first use in a call only (the chunk
-- runs on every EVALSHA, and making every algorithm's closures each time
-- was most of a check's cost).
local function bucket_ops()
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

  local function bucket_fresh(_, now) return { now, 0 } end

  -- Until whole, us, from the clamped time.
  local function bucket_ttl(st, it) return ceil_div(st[2], it.b) end

  return {
    check = bucket_check, commit = bucket_commit, ttl = bucket_ttl, fresh = bucket_fresh,
    refresh = true,
  }
end
