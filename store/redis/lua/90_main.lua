-- SPDX-License-Identifier: BSD-2-Clause
-- Copyright (c) The Sluice authors
-- 90_main.lua - the entry point: dispatch to the algorithms, load and
-- store states (SET with PX: expiry with the state), the all-or-nothing
-- check of every item (lib/limiter.c's rules), peeks, resets, refunds and
-- lease releases: run(keys, argv). It does not rank statuses (the C store
-- does, redis_plan.c) and is not itself an entry point: 95_eval.lua calls
-- run() for EVALSHA, 95_function.lua registers it as a Redis Function.

-- The call's KEYS and ARGV (EVAL's globals, or a Function's arguments),
-- its time (ARGV[2]: a number, or 'redis') and its settings (ARGV[3],
-- "<slack>,<prefix>", read into CONF_: slack ms, prefix, the cluster slot
-- tag the prefix may carry, the reset channel).
local KEYS_, ARGV_, NOW_, CONF_

-- As a Function the chunk runs once and these persist between calls: the
-- items and settings already read (the same limits come back call after
-- call, and reading an item's nine numbers from text cost more than a
-- whole decision), and the tables a call fills. They hold nothing of any
-- state in Redis, only what the arguments say. With EVALSHA they are made
-- anew per call, like everything else.
local ITEMS, N_ITEMS, CONFS, N_CONFS = {}, 0, {}, 0
local ITEMS_T, STATES, DECS, ABSENT, WRITES, COSTS, OUT = {}, {}, {}, {}, {}, {}, {}
local CACHE_MAX = 4096

-- ------------------------------------------------------------- dispatch

-- Each algorithm's ops (check, commit, ttl, fresh, refresh, release) are
-- made on first use and kept: for the rest of the call with EVALSHA (the
-- chunk runs per call), for the library's life as a Function (it runs once
-- at FUNCTION LOAD); ids 0-2 share the bucket's. An id that is none of 0-6
-- is refused.
local loaded = {}

local function make_ops(k)
  if k == 'warm' then return warm_ops() end
  if k == 0 then return bucket_ops() end
  if k == 3 then return fw_ops() end
  if k == 4 then return sw_ops() end
  if k == 5 then return sg_ops() end
  if k == 6 then return cc_ops() end
  return nil
end

local function ops_of(it)
  local a, k = it.algo, it.algo
  if a == 0 and it.warm == 1 then
    k = 'warm'
  elseif a == 1 or a == 2 then
    k = 0
  end
  local o = loaded[k]
  if o ~= nil then return o end
  o = make_ops(k)
  if o == nil then error('SLUICE_ALGO unknown algorithm ' .. tostring(a)) end
  loaded[k] = o
  return o
end

-- The state a never-seen key starts with (nil: "nothing recorded").
local function fresh(it, now)
  local f = ops_of(it).fresh
  if f == nil then return nil end
  return f(it, now)
end

-- A state as read (raw: GET/MGET's reply, false when absent), and whether
-- it was absent.
local function load(raw, it, now)
  if raw then return cmsgpack.unpack(raw), false end
  return fresh(it, now), true
end

-- Item i's fields, one argument "algo,cost,cr,shadow,warm,a,b,c,d", read
-- once per distinct text (ITEMS) and never changed after: `ops` is its
-- algorithm's ops.
local ITEM = '^(%d+),(%d+),(%d+),(%d+),(%d+),(%d+),(%d+),(%d+),(%d+)$'
local function item_at(i)
  local s = ARGV_[3 + i]
  local it = ITEMS[s]
  if it ~= nil then return it end
  local algo, cost, cr, shadow, warm, a, b, c, d = string.match(s or '', ITEM)
  if algo == nil then error('SLUICE_ARGS item ' .. i .. ' is not 9 numbers') end
  it = {
    algo = tonumber(algo), cost = tonumber(cost), cr = cr == '1', shadow = shadow == '1',
    warm = tonumber(warm), a = tonumber(a), b = tonumber(b), c = tonumber(c), d = tonumber(d),
  }
  it.ops = ops_of(it)
  if N_ITEMS >= CACHE_MAX then ITEMS, N_ITEMS = {}, 0 end
  ITEMS[s], N_ITEMS = it, N_ITEMS + 1
  return it
end

local function read_args()
  local conf = ARGV_[3]
  CONF_ = CONFS[conf]
  if CONF_ == nil then
    local slack, prefix = string.match(conf or '', '^(%d+),(.+)$')
    if slack == nil then error('SLUICE_ARGS settings are not slack,prefix') end
    CONF_ = {
      slack = tonumber(slack), prefix = prefix, tag = string.match(prefix, '{(.-)}'),
      channel = string.gsub(prefix, '{.*}$', '') .. ':v1:reset',
    }
    if N_CONFS >= CACHE_MAX then CONFS, N_CONFS = {}, 0 end
    CONFS[conf], N_CONFS = CONF_, N_CONFS + 1
  end
  NOW_ = ARGV_[2]
end

local function now_us()
  if NOW_ == 'redis' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local now = tonumber(NOW_)
  if now == nil then error('SLUICE_ARGS now is not a number') end
  return now
end

-- Write a state with its expiry in one command (never a key without an
-- expiry: envoyproxy/ratelimit#329). A state is kept `slack` ms past the
-- time it is whole, as the memory table keeps a drained entry until it
-- sweeps it: it still clamps a clock that steps back (contracts §Time).
local function store(key, it, st, slack_ms)
  if st == nil then
    redis.call('DEL', key)
    return
  end
  local ttl_us = it.ops.ttl(st, it) or 0
  if ttl_us < 0 then ttl_us = 0 end
  redis.call('SET', key, cmsgpack.pack(st), 'PX', ceil_div(ttl_us, 1000) + slack_ms)
end

local function lease_index(key, id)
  local h = string.sub(redis.sha1hex(key), 1, 16)
  return h, CONF_.prefix .. ':v1:lease:' .. h .. ':' .. id
end

local function run_check(now, peek)
  local n = #KEYS_
  local items, states, decs, absent, writes, costs = ITEMS_T, STATES, DECS, ABSENT, WRITES, COSTS
  local denied = false
  -- Every state in one read (one redis.call costs more than most checks);
  -- GET for the common single key, so a one-limit check needs no MGET.
  local raw1, raws
  if n == 1 then
    raw1 = redis.call('GET', KEYS_[1])
  elseif n > 1 then
    raws = redis.call('MGET', unpack(KEYS_, 1, n))
  end
  for i = 1, n do
    local it = item_at(i)
    local cost = peek and 0 or it.cost
    items[i], costs[i], writes[i] = it, cost, nil
    local raw = raw1
    if n > 1 then raw = raws[i] end
    states[i], absent[i] = load(raw, it, now)
    decs[i] = it.ops.check(states[i], it, now, cost)
    if decs[i].v == DENY and not it.shadow then denied = true end
  end
  -- Phase 2: every new state computed before anything is written, so a
  -- range error leaves Redis untouched. A counted denial (count_rejected)
  -- reports the state with it recorded, as every C commit() does.
  for i = 1, n do
    local it, d, cost = items[i], decs[i], costs[i]
    if cost > 0 then
      local self_deny = d.v == DENY
      local ops = it.ops
      if it.cr or (not denied and not self_deny) then
        writes[i] = ops.commit(states[i], it, now, cost, d)
        if self_deny and ops.refresh then
          local after = ops.check(writes[i], it, now, cost)
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
  local slack = CONF_.slack
  for i = 1, n do
    if writes[i] ~= nil then store(KEYS_[i], items[i], writes[i], slack) end
    if decs[i].lease ~= '' then
      local h, idx = lease_index(KEYS_[i], decs[i].lease)
      redis.call('SET', idx, KEYS_[i], 'PX', ceil_div(items[i].b, 1000) + slack)
      decs[i].lease = h .. '-' .. decs[i].lease
      -- Redis Cluster: the prefix is "<prefix>{T}", T a tag of this call's
      -- slot, so the index key lives in the slot of its state key; the
      -- token carries T so that a release finds it ("<h>-<id>-<T>").
      if CONF_.tag then decs[i].lease = decs[i].lease .. '-' .. CONF_.tag end
    end
  end
  local out, m = OUT, 1 + 6 * n
  out[1] = now
  for i = 1, n do
    local d, j = decs[i], (i - 1) * 6 + 1
    out[j + 1], out[j + 2], out[j + 3] = d.v, d.rem, d.reset
    out[j + 4], out[j + 5], out[j + 6] = d.retry, d.delay, d.lease
    states[i], decs[i], writes[i] = nil, nil, nil -- nothing kept past the call
  end
  for j = #out, m + 1, -1 do out[j] = nil end -- a longer reply before
  return out
end

local function run_release(now)
  local released = 0
  for j = 1, #KEYS_ do
    local key = redis.call('GET', KEYS_[j])
    local raw = key and redis.call('GET', key)
    if raw then
      local cc = { algo = 6 }
      cc.ops = ops_of(cc)
      local s, found = cc.ops.release(cmsgpack.unpack(raw), now, ARGV_[3 + j])
      if found == 1 then
        store(key, cc, s, CONF_.slack)
        redis.call('DEL', KEYS_[j])
        released = released + 1
      end
    end
  end
  return { now, released }
end

-- Give back a check's consumption (70_refund.lua); returns { now, n refunded }.
local function run_refund(now)
  local n, slack, done = #KEYS_, CONF_.slack, 0
  local REFUNDS = refunds()
  for i = 1, n do
    local it = item_at(i)
    local rf = REFUNDS[it.algo]
    if it.cost > 0 and not it.cr and rf ~= nil and not (it.algo == 0 and it.warm == 1) then
      local raw = redis.call('GET', KEYS_[i])
      if raw then
        store(KEYS_[i], it, rf(cmsgpack.unpack(raw), it, now, it.cost), slack)
        done = done + 1
      end
    end
  end
  return { now, done }
end

-- Forget every state key of the call and announce it on
-- "<prefix>:v1:reset" (one key per line: every node's over-limit cache
-- forgets them), then report the fresh states as a peek does.
local function run_reset(now)
  local n = #KEYS_
  if n > 0 then
    redis.call('DEL', unpack(KEYS_, 1, n))
    redis.call('PUBLISH', CONF_.channel, table.concat(KEYS_, '\n', 1, n))
  end
  return run_check(now, true)
end

local function main()
  read_args()
  local now = now_us()
  local op = ARGV_[1]
  if op == 'check' then return run_check(now, false) end
  if op == 'peek' then return run_check(now, true) end
  if op == 'release' then return run_release(now) end
  if op == 'refund' then return run_refund(now) end
  if op == 'reset' then return run_reset(now) end
  error('SLUICE_OP unknown op')
end

-- One call: its reply, or its error as an error reply whose text starts
-- with the SLUICE_ code the C store reads (redis_plan.c).
local function run(keys, argv)
  KEYS_, ARGV_ = keys, argv
  local ok, res = pcall(main)
  if ok then return res end
  if type(res) == 'table' then return res end -- a Redis error from redis.call
  local msg = tostring(res)
  local code = string.match(msg, '(SLUICE_%u+.*)$') or msg
  return redis.error_reply(code)
end
