/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * module.h - what the module's files share (internal to redis-module/).
 *
 * The commands (SLUICE.CHECK, .PEEK, .RESET, .REFUND, .RELEASE) take the
 * arguments of store/redis/lua/00_prelude.lua's calling convention without
 * its op (the op is the command's name) and give its reply:
 *
 *   SLUICE.<OP> numkeys key... now settings item...
 *
 * now in whole microseconds or "redis" (Redis's clock), the settings
 * "<slack ms>,<prefix>" and one argument per key: an item
 * "algo,cost,count_rejected,shadow,warm,a,b,c,d" (SLUICE.RELEASE: a lease
 * id). A call is parsed into struct sl__mcall, its states decoded into one scratch
 * arena that lives as long as the module (no allocation per call once it
 * has grown), decided, and written with its expiry in one command.
 *
 * The arena is bounded: a state's size follows its limit's parameters, not
 * what is stored (a sliding_log of 2^20 requests is 8 MiB of ring even for
 * an empty key), so a short call naming many large limits would otherwise
 * make Redis allocate without bound. A call whose states and encodings
 * need more than max-call-bytes (a load argument) is refused before any
 * key is opened, and an arena grown past SL__M_ARENA_KEEP_BYTES by one call
 * is freed when the call ends.
 *
 * Threads: everything runs on Redis's main thread, one command at a time.
 */
#ifndef SL_MODULE_H
#define SL_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rm_api.h"
#include "sluice.h"
#include "state.h"

#define SL__M_MAX_ITEMS  (SL_MAX_DESCRIPTORS * SL_MAX_LIMITS) /* what the C store sends */
#define SL__M_PREFIX_MAX 128
#define SL__M_LEASE_MAX  64

/* max-call-bytes: the default, and the range the load argument takes. */
#define SL__M_CALL_BYTES_DEFAULT ((size_t)8 << 20)
#define SL__M_CALL_BYTES_MIN     ((size_t)64 << 10)
#define SL__M_CALL_BYTES_MAX     ((size_t)1 << 32)
/* The most the arena keeps between calls (one sliding_log of the default
 * log cap, 10,000 entries, needs about 260 KB). */
#define SL__M_ARENA_KEEP_BYTES ((size_t)512 << 10)

/* One item of a call. */
struct sl__mitem {
    struct sl_limit l;
    uint64_t cost;
    RedisModuleString *name;
    RedisModuleKey *key;     /* open for the whole call, or NULL */
    void *st;                /* the decoded state, in the arena */
    size_t st_off;           /* ... at this offset */
    int64_t base_us;         /* concurrency: the id base of the stored state */
    bool absent;             /* the key held no state */
    bool write;              /* the state is to be written */
    size_t enc_off, enc_len; /* its encoding, in the arena */
    int64_t ttl_ns;
    struct sl_decision d;
    char lease[SL__M_LEASE_MAX]; /* "<h>-<id>[-<T>]" or "" */
};

/* One parsed call. */
struct sl__mcall {
    RedisModuleCtx *ctx;
    int64_t now_ns, now_us;
    /* How the call reaches replicas and the AOF: the command itself when
     * it is deterministic (the caller's time), else (Redis's clock, or a
     * reset, whose announcement replicas must not repeat) its effects, SET
     * ... PXAT and DEL. See sl__mkeys_replicate. */
    bool effects;
    bool wrote;
    int64_t slack_ms;
    const char *prefix; /* borrowed from argv */
    size_t prefix_len;
    size_t n;
    struct sl__mitem *items; /* the module's, SL__M_MAX_ITEMS of them */
};

/* The scratch arena (module.c): at least `bytes`, 8-byte aligned, valid
 * until the next call of it; NULL when out of memory. */
void *sl__marena(size_t bytes);
/* The most one call may take of it (max-call-bytes). */
size_t sl__marena_max(void);

/* args.c: parse argv of a call; with `items` false the fields after n are
 * not items (SLUICE.RELEASE's ids). On error, an error reply is sent and
 * false returned. */
bool sl__margs(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, bool items,
               struct sl__mcall *c);
/* Reply with an error "<code> <text>" (code: SLUICE_ARGS, SLUICE_RANGE...). */
int sl__merror(RedisModuleCtx *ctx, const char *code, const char *text);

/* check.c */
int sl__mcmd_check(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int sl__mcmd_peek(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int sl__mcmd_reset(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
/* refund.c */
int sl__mcmd_refund(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int sl__mcmd_release(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* cell.c: CL.THROTTLE, redis-cell's command */
int sl__mcmd_throttle(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* keys.c: open every item's key (WRITE or READ) and decode its state into
 * the arena; SL_OK, or an error reply sent and the keys closed. */
int sl__mkeys_load(struct sl__mcall *c, int mode);
void sl__mkeys_close(struct sl__mcall *c);
/* Encode every item with `write` set into the arena (after its state); an
 * error reply sent on failure, nothing written. */
int sl__mkeys_encode(struct sl__mcall *c);
/* Write bytes v[0..len) to the open `key` named `name`, to expire at_ms
 * (replicated as SET name v PXAT at_ms when c->effects). */
void sl__mkeys_put(struct sl__mcall *c, RedisModuleKey *key, RedisModuleString *name, const void *v,
                   size_t len, long long at_ms);
/* Delete the open `key` named `name` (replicated as DEL when c->effects). */
void sl__mkeys_del(struct sl__mcall *c, RedisModuleKey *key, RedisModuleString *name);
/* At the end of a command that wrote: replicate it verbatim unless its
 * effects were. A verbatim command replays on a replica or from the AOF
 * with the same arguments on the same states, so to the same bytes (the
 * replica and the AOF's server need the module: they need it to take over
 * anyway); the expiry differs by the replication delay at most. */
void sl__mkeys_replicate(struct sl__mcall *c);
/* The expiry of a state that must live ttl_ns more (+ the slack). */
long long sl__mkeys_at_ms(const struct sl__mcall *c, int64_t ttl_ns);
/* Write every item with `write` set (encoded already). */
void sl__mkeys_write(struct sl__mcall *c);

#endif /* SL_MODULE_H */
