-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 30_fixed_window.lua - fixed windows aligned to the epoch
-- (lib/algo/fixed_window.c), in whole microseconds.

-- fw_ops(): makes the ops of fixed_window and returns them; 90_main.lua
-- calls it on first use in a call only (the chunk runs on every EVALSHA,
-- and making every algorithm's closures each time was most of a check's
-- cost).
local function fw_ops()
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

  return {
    check = fw_check, commit = fw_commit, ttl = fw_ttl, refresh = true,
  }
end
