-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 60_concurrency.lua - in-flight slots with leases (lib/algo/concurrency.c);
-- lease ids exact beyond 2^53 as (base us, offset) pairs.

-- cc_ops(): makes the ops of concurrency (and its lease release) and
-- returns them; 90_main.lua calls it on first use in a call only (the chunk
-- runs on every EVALSHA, and making every algorithm's closures each time
-- was most of a check's cost).
local function cc_ops()
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

  local function cc_fresh(_, now) return { now, 0, -1 } end

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

  return {
    check = cc_check, commit = cc_commit, ttl = cc_ttl, fresh = cc_fresh, release = cc_release,
  }
end
