-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 50_sliding_log.lua - the exact sliding log (lib/algo/sliding_log.c),
-- kept as runs of (time, count) instead of a ring of timestamps.

-- sg_ops(): makes the ops of sliding_log and returns them; 90_main.lua
-- calls it on first use in a call only (the chunk runs on every EVALSHA,
-- and making every algorithm's closures each time was most of a check's
-- cost).
local function sg_ops()
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

  return {
    check = sg_check, commit = sg_commit, ttl = sg_ttl, refresh = true,
  }
end
