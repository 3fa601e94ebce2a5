/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rm_api.h - the part of Redis's module ABI this module uses, declared here
 * (Debian ships no redismodule.h; this is not a copy of it).
 *
 * How the ABI works (Redis 7.0, the "API version 1" every module uses): the
 * shared object exports RedisModule_OnLoad(ctx, argv, argc); the first word
 * of the context Redis passes is a pointer to Redis's GetApi function,
 * which, given an exported name such as "RedisModule_OpenKey", stores that
 * function's address. sl__rm_load() asks for every function below, by
 * name, into the table sl__rm, and fails if Redis lacks one (a Redis older
 * than 7.0). Every type Redis owns is opaque here; the few structures Redis
 * reads from the module (command info, key specs) are laid out as Redis
 * 7.0 defines them for RedisModule_SetCommandInfo, version 1.
 *
 * It does not implement commands (module.c does) and holds no state but
 * the table, filled once at load on Redis's main thread.
 */
#ifndef SL_RM_API_H
#define SL_RM_API_H

#include <stddef.h>
#include <stdint.h>

/* Return codes and constants of the ABI. */
#define SL__RM_OK             0
#define SL__RM_ERR            1
#define SL__RM_APIVER_1       1
#define SL__RM_READ           (1 << 0)
#define SL__RM_WRITE          (1 << 1)
#define SL__RM_KEYTYPE_EMPTY  0
#define SL__RM_KEYTYPE_STRING 1
/* Module options: the module copes with a failed RDB read (it has no data
 * type to read) and with a replica loading the master's data while it
 * serves the old (diskless, swapdb). Without the latter a replica of a
 * Redis with any module writes the master's RDB to disk to load it. */
#define SL__RM_OPTIONS_HANDLE_IO_ERRORS       (1 << 0)
#define SL__RM_OPTIONS_HANDLE_REPL_ASYNC_LOAD (1 << 2)

/* Opaque: owned by Redis. */
typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleCommand RedisModuleCommand;

typedef int (*sl__rm_cmd_fn)(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* ------------------------------------------------ command info, version 1 */

/* Where a command's keys are (a key spec): begin search and find keys. */
enum sl__rm_bs { SL__RM_BS_INVALID = 0, SL__RM_BS_UNKNOWN, SL__RM_BS_INDEX, SL__RM_BS_KEYWORD };
enum sl__rm_fk { SL__RM_FK_OMITTED = 0, SL__RM_FK_UNKNOWN, SL__RM_FK_RANGE, SL__RM_FK_KEYNUM };

/* Key spec flags (bits): one of RO/RW/OW/RM, at most one of
 * INSERT/DELETE/UPDATE. */
#define SL__RM_KEY_RW     (UINT64_C(1) << 1)
#define SL__RM_KEY_ACCESS (UINT64_C(1) << 4)
#define SL__RM_KEY_UPDATE (UINT64_C(1) << 5)

struct sl__rm_keyspec {
    const char *notes;
    uint64_t flags;
    enum sl__rm_bs begin_search_type;
    union {
        struct {
            int pos; /* argv index where the search starts */
        } index;
        struct {
            const char *keyword;
            int startfrom;
        } keyword;
    } bs;
    enum sl__rm_fk find_keys_type;
    union {
        struct {
            int lastkey, keystep, limit;
        } range;
        struct {
            int keynumidx; /* index of numkeys, relative to bs */
            int firstkey;  /* index of the first key, relative to bs */
            int keystep;
        } keynum;
    } fk;
};

struct sl__rm_history {
    const char *since;
    const char *changes;
};

/* Laid out as Redis's argument descriptions; the module gives none, so
 * only its size matters (the version says it). */
struct sl__rm_arg {
    const char *name;
    int type;
    int key_spec_index;
    const char *token;
    const char *summary;
    const char *since;
    int flags;
    const char *deprecated_since;
    struct sl__rm_arg *subargs;
};

struct sl__rm_info_version {
    int version; /* 1 */
    size_t sizeof_historyentry;
    size_t sizeof_keyspec;
    size_t sizeof_arg;
};

struct sl__rm_info {
    const struct sl__rm_info_version *version;
    const char *summary;
    const char *complexity;
    const char *since;
    struct sl__rm_history *history;
    const char *tips;
    int arity;                        /* -N: at least N arguments, the name included */
    struct sl__rm_keyspec *key_specs; /* ended by one with begin_search_type 0 */
    struct sl__rm_arg *args;
};

/* ------------------------------------------------------------ functions */

/* The functions, each under the name Redis exports it as
 * ("RedisModule_" and the name in CamelCase, see rm_api.c). */
struct sl__rm_api {
    void (*set_module_attribs)(RedisModuleCtx *ctx, const char *name, int ver, int apiver);
    void (*set_module_options)(RedisModuleCtx *ctx, int options);
    int (*is_module_name_busy)(const char *name);
    int (*create_command)(RedisModuleCtx *ctx, const char *name, sl__rm_cmd_fn fn,
                          const char *flags, int firstkey, int lastkey, int keystep);
    RedisModuleCommand *(*get_command)(RedisModuleCtx *ctx, const char *name);
    int (*set_command_info)(RedisModuleCommand *cmd, const struct sl__rm_info *info);
    void (*log)(RedisModuleCtx *ctx, const char *level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

    void *(*alloc)(size_t bytes);
    void *(*realloc)(void *ptr, size_t bytes);
    void (*free)(void *ptr);

    RedisModuleKey *(*open_key)(RedisModuleCtx *ctx, RedisModuleString *name, int mode);
    void (*close_key)(RedisModuleKey *key);
    int (*key_type)(RedisModuleKey *key);
    int (*delete_key)(RedisModuleKey *key);
    char *(*string_dma)(RedisModuleKey *key, size_t *len, int mode);
    int (*string_truncate)(RedisModuleKey *key, size_t len);
    int (*set_abs_expire)(RedisModuleKey *key, long long at_ms);

    RedisModuleString *(*create_string)(RedisModuleCtx *ctx, const char *ptr, size_t len);
    void (*free_string)(RedisModuleCtx *ctx, RedisModuleString *s);
    const char *(*string_ptr_len)(const RedisModuleString *s, size_t *len);
    int (*string_to_long_long)(const RedisModuleString *s, long long *out);

    int (*reply_with_array)(RedisModuleCtx *ctx, long len);
    int (*reply_with_long_long)(RedisModuleCtx *ctx, long long v);
    int (*reply_with_string_buffer)(RedisModuleCtx *ctx, const char *buf, size_t len);
    int (*reply_with_error)(RedisModuleCtx *ctx, const char *err);
    int (*wrong_arity)(RedisModuleCtx *ctx);

    int (*is_keys_position_request)(RedisModuleCtx *ctx);
    void (*key_at_pos)(RedisModuleCtx *ctx, int pos);
    int (*replicate)(RedisModuleCtx *ctx, const char *cmd, const char *fmt, ...);
    int (*replicate_verbatim)(RedisModuleCtx *ctx);
    int (*publish_message)(RedisModuleCtx *ctx, RedisModuleString *channel,
                           RedisModuleString *message);
    long long (*milliseconds)(void);
};

extern struct sl__rm_api sl__rm;

/* Fill sl__rm through ctx's GetApi and register the module under `name`
 * at version `ver`. SL__RM_OK, or SL__RM_ERR when a function is missing or
 * the name is taken. Call from RedisModule_OnLoad only. */
int sl__rm_load(RedisModuleCtx *ctx, const char *name, int ver);

#endif /* SL_RM_API_H */
