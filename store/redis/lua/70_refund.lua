-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 70_refund.lua - giving back what an allowed check consumed : on
-- Redis Cluster a check whose descriptors span slots is one call per slot;
-- when one slot denies, the others' calls, already committed, are undone
-- by op "refund" with the same items at the time the check used (`now`).
-- count_rejected items are not refunded (they count either way), nor the
-- warm-up bucket (its state is not a level; it stays consumed:
-- conservative) or concurrency (not supported on a cluster).
--
-- Exactness (docs/distributed.md): windows and logs get back exactly what
-- the check added, whatever ran in between. A bucket's level is kept as of
-- its last update and drains continuously, so subtracting cost * p may
-- take back up to what drained between the check and the refund more than
-- the check added (never more than the cost): the bound of a refund.

-- refunds(): makes the refund function of each algorithm id and returns
-- them; 90_main.lua calls it on first use in a call only (the chunk runs on
-- every EVALSHA, and making every algorithm's closures each time was most
-- of a check's cost).
local function refunds()
  local function bucket_refund(st, it, now, cost)
    local D = st[2] - cost * it.a
    if D < 0 then D = 0 end
    return { st[1], D }
  end

  local function fw_refund(st, it, now, cost)
    if divmod(st[1], it.a) ~= divmod(now, it.a) then return st end -- that window is over
    return { st[1], math.max(0, st[2] - cost) }
  end

  local function sw_refund(st, it, now, cost)
    local w, wl = divmod(now, it.a), divmod(st[1], it.a)
    if wl == w then return { st[1], math.max(0, st[2] - cost), st[3] } end
    if wl == w + 1 then return { st[1], st[2], math.max(0, st[3] - cost) } end
    return st -- both windows over: nothing left to give back
  end

  -- The check logged its entries at `now`, or at the newest entry's time when
  -- the clock was behind it: the first run at or after `now`.
  local function sg_refund(st, it, now, cost)
    local n, out = math.min(cost, it.b), {}
    for i = 1, #st, 2 do
      local c = st[i + 1]
      if n > 0 and st[i] >= now then
        local take = math.min(n, c)
        c, n = c - take, n - take
      end
      if c > 0 then
        out[#out + 1] = st[i]
        out[#out + 1] = c
      end
    end
    return out
  end

  local REFUNDS = {
    [0] = bucket_refund, [1] = bucket_refund, [2] = bucket_refund,
    [3] = fw_refund, [4] = sw_refund, [5] = sg_refund,
  }

  return REFUNDS
end
