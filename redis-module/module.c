/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * module.c - sluice-redis.so, Sluice's algorithms as native Redis commands:
 * the entry points Redis calls (RedisModule_OnLoad, RedisModule_OnUnload),
 * the table of commands with their key specs, SLUICE.VERSION, and the
 * scratch arena the commands share.
 *
 * Commands (module.h has the arguments; docs/distributed.md the reasons):
 *   SLUICE.CHECK    decide every limit all-or-nothing, write, expire   (write)
 *   SLUICE.PEEK     the same at cost 0, nothing written
 *   SLUICE.RESET    delete the states, announce them, report fresh ones
 *   SLUICE.REFUND   give back a check's consumption (Redis Cluster)
 *   SLUICE.RELEASE  free concurrency leases by their index keys
 *   SLUICE.VERSION  ["sluice-redis", version, protocol]: what the store
 *                   detects on connect (store/redis/redis_conn.c)
 *   CL.THROTTLE     redis-cell's command, replies and stored state (cell.c),
 *                   unless another module (redis-cell) has the name
 * A check that takes a concurrency slot is the acquire: its lease comes
 * back in the reply and SLUICE.RELEASE gives it back.
 *
 * Replication and the AOF: a call with the caller's time is replicated as
 * itself (replicas and the AOF's server load the module, as they must to
 * take over), one with Redis's clock, and a reset, as their effects
 * (keys.c).
 *
 * One load argument, "max-call-bytes <n>" (default 8 MiB): the most
 * scratch memory one call may need (module.h says why).
 *
 * Unloading (MODULE UNLOAD sluice) is clean: the module registers no data
 * type, timer or blocked client, and frees its arena; the stored states are
 * plain strings that the scripts read as well.
 */
#include <string.h>
#include <strings.h>

#include "module.h"

#define MODULE_NAME    "sluice"
#define MODULE_VERSION 100 /* 0.1.0 */
#define PROTOCOL       1   /* the calling convention of store/redis/lua/00_prelude.lua */

static char *arena;
static size_t arena_cap;
static size_t call_max_bytes = SL__M_CALL_BYTES_DEFAULT;

void *sl__marena(size_t bytes)
{
    if (bytes > arena_cap) {
        size_t cap = arena_cap * 2 > bytes ? arena_cap * 2 : bytes;
        char *p = sl__rm.realloc(arena, cap < 4096 ? 4096 : cap);
        if (p == NULL)
            return NULL;
        arena = p;
        arena_cap = cap < 4096 ? 4096 : cap;
    }
    return arena;
}

size_t sl__marena_max(void)
{
    return call_max_bytes;
}

/* After a call: a call that grew the arena past what the usual calls need
 * gives it back, so that one large call leaves nothing behind in Redis's
 * used_memory. */
static void arena_trim(void)
{
    if (arena_cap <= SL__M_ARENA_KEEP_BYTES)
        return;
    sl__rm.free(arena);
    arena = NULL;
    arena_cap = 0;
}

static int version_cmd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    (void)argv;
    if (argc != 1)
        return sl__rm.wrong_arity(ctx);
    sl__rm.reply_with_array(ctx, 3);
    sl__rm.reply_with_string_buffer(ctx, "sluice-redis", 12);
    sl__rm.reply_with_string_buffer(ctx, SLUICE_VERSION, strlen(SLUICE_VERSION));
    sl__rm.reply_with_long_long(ctx, PROTOCOL);
    return SL__RM_OK;
}

/* The keys: numkeys at argv[1], then that many keys, as EVAL's. */
static struct sl__rm_keyspec keys_rw[] = {
    {.notes = "the state keys (or lease index keys)",
     .flags = SL__RM_KEY_RW | SL__RM_KEY_ACCESS | SL__RM_KEY_UPDATE, /* as INCR's */
     .begin_search_type = SL__RM_BS_INDEX,
     .bs.index.pos = 1,
     .find_keys_type = SL__RM_FK_KEYNUM,
     .fk.keynum = {0, 1, 1}},
    {0},
};

static const struct sl__rm_info_version info_v1 = {
    1, sizeof(struct sl__rm_history), sizeof(struct sl__rm_keyspec), sizeof(struct sl__rm_arg)};

/* Redis 7.0 routes a module command on a cluster (and checks ACL key
 * patterns) by its legacy key range or by asking the command itself; a
 * variable key count fits no range, so the commands answer the question
 * ("getkeys-api"): argv[2..2+numkeys). The key specs above serve COMMAND
 * INFO and COMMAND GETKEYS. */
static int keys_of(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    long long nk;

    if (argc < 2 || sl__rm.string_to_long_long(argv[1], &nk) != SL__RM_OK || nk < 0 ||
        nk > argc - 2)
        return SL__RM_OK; /* no keys: the command itself refuses the call */
    for (int i = 0; i < (int)nk; i++)
        sl__rm.key_at_pos(ctx, 2 + i);
    return SL__RM_OK;
}

/* Each command: the keys when Redis asks for them, else the command,
 * and then the arena trimmed (whichever way the command ended). */
#define ENTRY(name, fn)                                                                            \
    static int name(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)                       \
    {                                                                                              \
        int rc;                                                                                    \
        if (sl__rm.is_keys_position_request(ctx))                                                  \
            return keys_of(ctx, argv, argc);                                                       \
        rc = fn(ctx, argv, argc);                                                                  \
        arena_trim();                                                                              \
        return rc;                                                                                 \
    }
ENTRY(check_entry, sl__mcmd_check)
ENTRY(peek_entry, sl__mcmd_peek)
ENTRY(reset_entry, sl__mcmd_reset)
ENTRY(refund_entry, sl__mcmd_refund)
ENTRY(release_entry, sl__mcmd_release)
#undef ENTRY

static const struct {
    const char *name;
    sl__rm_cmd_fn fn;
    const char *flags;
    int arity;
    const char *summary;
} commands[] = {
    {"SLUICE.CHECK", check_entry, "write deny-oom getkeys-api", -4,
     "Decide a request on every limit all-or-nothing and record it, expiry included"},
    {"SLUICE.PEEK", peek_entry, "write getkeys-api", -4,
     "Report the limits' states, consuming nothing"},
    {"SLUICE.RESET", reset_entry, "write getkeys-api", -4,
     "Forget the limits' states, announce it, report the fresh states"},
    {"SLUICE.REFUND", refund_entry, "write deny-oom getkeys-api", -4,
     "Give back what an admitted check consumed (Redis Cluster, cross-slot denials)"},
    {"SLUICE.RELEASE", release_entry, "write getkeys-api", -4, "Release concurrency leases"},
};

static int create(RedisModuleCtx *ctx, size_t i)
{
    struct sl__rm_info info = {
        .version = &info_v1,
        .summary = commands[i].summary,
        .since = SLUICE_VERSION,
        .arity = commands[i].arity,
        .key_specs = keys_rw,
    };
    RedisModuleCommand *cmd;

    if (sl__rm.create_command(ctx, commands[i].name, commands[i].fn, commands[i].flags, 0, 0, 0) !=
        SL__RM_OK)
        return SL__RM_ERR;
    cmd = sl__rm.get_command(ctx, commands[i].name);
    return cmd != NULL ? sl__rm.set_command_info(cmd, &info) : SL__RM_ERR;
}

/* The two symbols the module exports (everything else is hidden). */
__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv, int argc);
__attribute__((visibility("default"))) int RedisModule_OnUnload(RedisModuleCtx *ctx);

/* The load arguments: none, or "max-call-bytes <n>". A module that
 * cannot honour its arguments refuses to load rather than run with
 * another bound than the operator wrote. */
static int load_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    size_t len;
    long long v;

    call_max_bytes = SL__M_CALL_BYTES_DEFAULT; /* MODULE LOAD again after an unload */
    if (argc == 0)
        return SL__RM_OK;
    if (argc == 2) {
        const char *name = sl__rm.string_ptr_len(argv[0], &len);
        if (len == 14 && strncasecmp(name, "max-call-bytes", 14) == 0 &&
            sl__rm.string_to_long_long(argv[1], &v) == SL__RM_OK &&
            v >= (long long)SL__M_CALL_BYTES_MIN && v <= (long long)SL__M_CALL_BYTES_MAX) {
            call_max_bytes = (size_t)v;
            return SL__RM_OK;
        }
    }
    sl__rm.log(ctx, "warning",
               "sluice-redis takes no arguments or 'max-call-bytes <n>', n from %zu to %zu "
               "(default %zu)",
               SL__M_CALL_BYTES_MIN, SL__M_CALL_BYTES_MAX, SL__M_CALL_BYTES_DEFAULT);
    return SL__RM_ERR;
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (sl__rm_load(ctx, MODULE_NAME, MODULE_VERSION) != SL__RM_OK)
        return SL__RM_ERR; /* Redis older than 7.0, or the name is taken */
    if (load_args(ctx, argv, argc) != SL__RM_OK)
        return SL__RM_ERR;
    /* No data type: nothing to fail in an RDB, nothing against loading a
     * replica's data asynchronously (repl-diskless-load swapdb). */
    sl__rm.set_module_options(ctx, SL__RM_OPTIONS_HANDLE_IO_ERRORS |
                                       SL__RM_OPTIONS_HANDLE_REPL_ASYNC_LOAD);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (create(ctx, i) != SL__RM_OK) {
            sl__rm.log(ctx, "warning", "sluice-redis: cannot register %s", commands[i].name);
            return SL__RM_ERR;
        }
    }
    if (sl__rm.create_command(ctx, "SLUICE.VERSION", version_cmd, "readonly fast", 0, 0, 0) !=
        SL__RM_OK)
        return SL__RM_ERR;
    /* The key is argument 1 (a range Redis knows without asking). When the
     * name is taken (redis-cell is loaded too) the module loads without it:
     * the SLUICE.* commands do not need it. */
    if (sl__rm.create_command(ctx, "CL.THROTTLE", sl__mcmd_throttle, "write deny-oom", 1, 1, 1) !=
        SL__RM_OK)
        sl__rm.log(ctx, "warning",
                   "sluice-redis: CL.THROTTLE is taken (redis-cell loaded?); loaded without it");
    return SL__RM_OK;
}

int RedisModule_OnUnload(RedisModuleCtx *ctx)
{
    (void)ctx;
    sl__rm.free(arena);
    arena = NULL;
    arena_cap = 0;
    return SL__RM_OK;
}
