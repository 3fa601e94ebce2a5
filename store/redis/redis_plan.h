/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_plan.h - one check as one Redis call, and back (internal).
 *
 * A plan turns resolved descriptors (sl_match) into the keys and arguments
 * of one call in one of three engines that take the same arguments and give
 * the same reply: the Redis module's command (SLUICE.CHECK etc., redis-module/),
 * the Redis Functions library (FCALL) or the script (EVALSHA), both made
 * of store/redis/lua/NN_*.lua: one state key per distinct (descriptor key, limit),
 * duplicates merged into one summed cost exactly as lib/limiter.c merges
 * them; then it turns the script's reply into an sl_result with the same
 * contracts §Decisions reporting as sl_limiter_check_matched (denying limit with the longest
 * retry, else the longest delay, else the lowest remaining, tie: the longer
 * period; shadow limits never deny).
 *
 * It does no I/O and allocates nothing: the command is built in a
 * caller-owned struct sl__redis_cmd (reused call after call), and the plan
 * (struct sl__redis_plan) is what must survive until the reply arrives.
 *
 * Ownership: a plan keeps pointers to the sl_limit objects of the matches;
 * they belong to the rules snapshot (or the caller's ad hoc limits), which
 * must outlive the reply.
 *
 * Keys: "<prefix>:v1:{<tag>}:<key>:<limit id, 16 hex>", where <tag> is the
 * domain and the descriptor's first entry and <key> the matched key bytes,
 * both escaped (bytes outside '!'..'~', and ':', '{', '}', '%' as %XX), so
 * every key of one descriptor hashes to one Redis Cluster slot .
 */
#ifndef SL_REDIS_PLAN_H
#define SL_REDIS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct redisReply;

#define SL__REDIS_MAX_ITEMS (SL_MAX_DESCRIPTORS * SL_MAX_LIMITS)
/* The arguments after the keys besides one per item: op, now and the
 * settings (store/redis/lua/00_prelude.lua). */
#define SL__REDIS_FIXED_ARGS 3
/* Redis refuses costs at or above this (docs/contracts.md §Time). */
#define SL__REDIS_COST_MAX   (UINT64_C(1) << 31)
#define SL__REDIS_PREFIX_MAX 64

/* REFUND: give back what an allowed check of the same items consumed, at
 * the time it used (a cross-slot denial on Redis Cluster, redis_fan.c).
 * RESET: delete the items' keys, announce them on <prefix>:v1:reset (the
 * over-limit caches forget them), then peek. */
enum sl__redis_op {
    SL__REDIS_CHECK = 0,
    SL__REDIS_PEEK = 1,
    SL__REDIS_REFUND = 2,
    SL__REDIS_RESET = 3,
};

/* Where the algorithms run in Redis (store.redis.engine); AUTO is only a
 * configuration value: the store picks one of the others per connection
 * (the module if loaded, else Functions on Redis 7+, else EVALSHA). */
enum sl__redis_engine {
    SL__ENGINE_AUTO = 0,
    SL__ENGINE_MODULE = 1,   /* SLUICE.CHECK ... (redis-module/, sluice-redis.so) */
    SL__ENGINE_FUNCTION = 2, /* FCALL <sl__redis_fn_name> ... */
    SL__ENGINE_SCRIPT = 3,   /* EVALSHA <sl__redis_lua_sha> ... */
};
/* The module's protocol this store speaks (SLUICE.VERSION's third element):
 * the arguments and reply of store/redis/lua/00_prelude.lua. */
#define SL__REDIS_MODULE_PROTOCOL 1

/* One limit of one descriptor, in request order. */
struct sl__redis_slot {
    const struct sl_limit *l;
    uint16_t desc; /* descriptor index */
    uint16_t item; /* index of the merged item (the script's KEYS index) */
};

/* What a reply needs to become an sl_result. */
struct sl__redis_plan {
    size_t n_desc;
    size_t n_slots;
    size_t n_items;
    uint16_t first[SL_MAX_DESCRIPTORS]; /* first slot of each descriptor */
    uint16_t count[SL_MAX_DESCRIPTORS];
    struct sl__redis_slot slots[SL__REDIS_MAX_ITEMS];
    const struct sl_limit *item_l[SL__REDIS_MAX_ITEMS]; /* the item's first limit */
    uint64_t item_cost[SL__REDIS_MAX_ITEMS];            /* merged cost sent */
};

/* Settings shared by every call of one store. */
struct sl__redis_opts {
    char prefix[SL__REDIS_PREFIX_MAX + 1]; /* "sluice" by default */
    bool redis_clock;                      /* store.clock: redis */
    int64_t slack_ms;                      /* added to every key's expiry */
    /* The engine calls are built for (never AUTO): the store sets the one
     * its connections agreed on (redis_conn.c). Script by default. */
    enum sl__redis_engine engine;
};
void sl__redis_opts_init(struct sl__redis_opts *o);

/* The command: argv[first..argc) for redisCommandArgv (sl__redis_cmd_format).
 * Whatever the engine, argv[2] is numkeys and the keys are argv[3..]:
 * "EVALSHA" sha or "FCALL" name in argv[0..1] (first 0), the module's
 * command name in argv[1] (first 1). The op follows the keys for the
 * script and the function, and is the module command's name. */
#define SL__REDIS_ARGV_MAX (3 + SL__REDIS_FIXED_ARGS + SL__REDIS_MAX_ITEMS * 2)
#define SL__REDIS_ARENA    (512 * 1024)
#define SL__REDIS_KEY0     3 /* argv index of the first key */
struct sl__redis_cmd {
    int argc;
    int first;     /* argv index the command starts at */
    int prefix_at; /* argv index of the settings "<slack>,<prefix>" */
    const char *argv[SL__REDIS_ARGV_MAX];
    size_t argvlen[SL__REDIS_ARGV_MAX];
    size_t used; /* bytes of arena in use */
    char arena[SL__REDIS_ARENA];
};

/* Format the built command for hiredis into *out (redisFreeCommand it);
 * its length, or -1 when out of memory. */
int sl__redis_cmd_format(struct sl__redis_cmd *c, char **out);
/* Redis Cluster, a call taking leases: the prefix in the settings becomes
 * "<prefix>{tag}", so their index keys hash to the call's slot. SL_OK,
 * SL_ETOOBIG. */
int sl__redis_cmd_tag_prefix(struct sl__redis_cmd *c, const char *tag);

/*
 * A limit's parameters as the script's fields a b c d and warm flag, reduced
 * so the script's double arithmetic is exact (see store/redis/lua/90_main.lua). SL_ERANGE
 * when a duration is not a whole microsecond or a parameter is beyond the
 * exact range (documented in docs/distributed.md); SL_EINVAL for an unknown
 * algorithm. f[] receives 5 values: warm a b c d.
 */
int sl__redis_limit_fields(const struct sl_limit *l, int64_t f[5]);

/* What a plan is built of: `op` over descriptors m[0..n) of `req` (its
 * time, per-descriptor costs). The caller's (on its stack), borrowed for
 * the build: the plan keeps only the limits' pointers (Ownership above). */
struct sl__redis_plan_in {
    enum sl__redis_op op;
    const struct sl_request *req;
    const struct sl_match *m;
    size_t n;
};

/*
 * Build the plan and the command for `in`, for the engine o->engine, head
 * included. Returns SL_OK; SL_ETOOBIG past a cap
 * (keys beyond the arena), SL_ERANGE for a cost >= 2^31 or a limit outside
 * the exact range, SL_EINVAL for bad arguments. On error nothing is valid.
 */
int sl__redis_plan_build(const struct sl__redis_opts *o, const struct sl__redis_plan_in *in,
                         struct sl__redis_plan *plan, struct sl__redis_cmd *cmd);

/*
 * Fill `res` from the script's reply to a plan's command. `now_us` (may be
 * NULL) receives the time the script used; `items` (may be NULL, else
 * plan->n_items long) each item's own decision, before contracts §Decisions reporting.
 * SL_OK; SL_ERANGE when the script refused for exactness (SLUICE_RANGE);
 * SL_EINVAL for any other error reply or a malformed one.
 */
int sl__redis_plan_result(const struct sl__redis_plan *plan, const struct redisReply *r,
                          struct sl_result *res, int64_t *now_us, struct sl_decision *items);

/*
 * The command releasing every slot of a lease token from a result of this
 * store ("<h>-<id>" pieces joined by '.'), at `now_ns`. SL_OK, SL_EINVAL
 * for a malformed token. Its reply gives SL_OK (something released) or
 * SL_ENOENT through sl__redis_release_result.
 */
int sl__redis_release_build(const struct sl__redis_opts *o, const char *lease, size_t len,
                            int64_t now_ns, struct sl__redis_cmd *cmd);
int sl__redis_release_result(const struct redisReply *r);

/* Is this error reply Redis's NOSCRIPT (the script cache was flushed) or
 * its "Function not found" (FUNCTION FLUSH, a restart without
 * persistence)? Then the code is loaded again and the call resent. */
bool sl__redis_is_noscript(const struct redisReply *r);
/* Is it "unknown command" for the module's command (the module was
 * unloaded)? Then the connection detects its engine again. */
bool sl__redis_is_nomodule(const struct redisReply *r);

/* The script and the Functions library (store/redis/lua/NN_*.lua joined,
 * embedded at build time by store/redis/lua/embed.cmake). The script's
 * SHA-1 is what SCRIPT LOAD answers; the library (first line
 * "#!lua name=<sl__redis_fn_name>") registers one function of that name. */
extern const char sl__redis_lua[];
extern const size_t sl__redis_lua_len;
extern const char sl__redis_lua_sha[];
extern const char sl__redis_fn[];
extern const size_t sl__redis_fn_len;
extern const char sl__redis_fn_name[];

#endif /* SL_REDIS_PLAN_H */
