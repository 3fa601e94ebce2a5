/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * kind.h - how one kind of store plugs into store.h (private to store/).
 *
 * A kind is one `const struct sl__store_kind`, listed in store/kinds.c,
 * around its configuration part, one `const struct sl__store_kind_config`
 * listed in store/kinds_config.c.
 * It brings its configuration (a struct of its own, described by a key
 * table, plus keys it parses itself), its constructor, its lines in
 * /metrics, its part of the health view, its state for operators (the
 * dashboard) and, optionally, rules shared across nodes. The server never
 * sees a kind: store.h's functions dispatch on the configured one.
 *
 * Adding a store: write store/<name>/ with one `const struct sl__store_kind
 * sl__store_kind_<name>` and its configuration (in a file of its own that
 * names no runtime function), declare both below, add them to kinds[] in
 * store/kinds.c and store/kinds_config.c, and its sources to store/CMakeLists.txt; document its
 * keys in docs/configuration.md (a test compares them with sluiced --help).
 */
#ifndef SL_STORE_KIND_H
#define SL_STORE_KIND_H

#include "keytab.h"
#include "store.h"

/* What a store is made with besides its configuration. */
struct sl__store_env {
    uv_loop_t *loop;      /* the worker's: the store lives on its thread */
    sl_limiter *lim;      /* shared by the workers, outlives the store */
    sl__store_log_fn log; /* the server's log (store.h); NULL: stderr */
    void *log_arg;
    void *shared; /* the kind's process-wide state (shared_new), or NULL */
};

/* A kind's configuration: everything `sluice check -c` needs of it, kept
 * apart from its runtime so that the configuration check links no event
 * loop and no client library (the target sluice_store_conf). */
struct sl__store_kind_config {
    const char *name; /* the value of store.type */

    /* Configuration: a struct of cfg_size bytes, zeroed, then every row of
     * keys[0..n_keys) set to its default, then init() (may be NULL) for
     * what is not a key. */
    size_t cfg_size;
    const struct sl__key *(*keys)(size_t *n); /* the table; NULL: none */
    void (*init)(void *cfg);
    /* Keys outside the table (patterns such as store.redis.policies.D):
     * SL_OK, SL_ENOENT (not this kind's), SL_EINVAL with err. value NULL:
     * the section `key` is given as a mapping (possibly empty). May be
     * NULL. */
    int (*set)(void *cfg, const char *key, const char *value, char *err, size_t errlen);
    /* Mappings under store. this kind owns ("store.redis"), NULL-ended. */
    const char *const *sections;
    /* Extra --help lines (for what set() parses). May be NULL. */
    void (*help)(FILE *out);
    /* The whole configuration is consistent. May be NULL. */
    int (*check)(const void *cfg, char *err, size_t errlen);
    void (*free_cfg)(void *cfg); /* beyond the table's strings; may be NULL */

    /* Another kind whose configuration this one also reads (the hybrid
     * store connects with the Redis store's keys): once every kind's
     * configuration is made, link(cfg, that kind's cfg). May be NULL. */
    const struct sl__store_kind_config *reads;
    void (*link)(void *cfg, const void *other);
};

/* A kind at run time: its configuration, and what it makes of it. */
struct sl__store_kind {
    const struct sl__store_kind_config *config;

    /* What every store made from one configuration shares (one per
     * process: e.g. which events were already logged), made before the
     * first store of the configuration and freed with the configuration.
     * Both NULL when none. */
    void *(*shared_new)(void);
    void (*shared_free)(void *shared);

    int (*create)(const void *cfg, const struct sl__store_env *env, struct sl__store **out);
    /* The kind's own lines of store.h's sl__store_metrics_render (after
     * sluice_store_up), appended to buf[*len..cap): true, or false when
     * they do not fit (*len unchanged). May be NULL. Any thread. */
    bool (*metrics)(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                    size_t *len);
    /* The kind's own members of store.h's sl__store_health_render, each
     * written as ',"name":value'; as metrics. May be NULL. */
    bool (*health_members)(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                           size_t *len);

    /* store.h's sl__store_status_render for this kind; may be NULL. */
    size_t (*status)(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                     size_t *len);

    /* Rules across nodes; all NULL when the kind cannot share rules. */
    bool (*rules_shared)(const void *cfg);
    int (*rules_publish)(const void *cfg, const char *id, const char *yaml, size_t len,
                         uint64_t *version);
    int (*rules_subscribe)(const void *cfg, uv_loop_t *loop, const char *db_path,
                           void (*on_change)(void *arg), void *arg, void **out);
    void (*rules_unsubscribe)(void *sub);

    /* A fleet's shared figures (store.h's sl__store_fleet_*); all NULL
     * when the kind shares none. fleet_open copies what it needs of cfg. */
    void *(*fleet_open)(const void *cfg);
    int (*fleet_share)(void *f, const struct sl__store_fleet_put *p, char **out, size_t *len);
    void (*fleet_close)(void *f);
};

/* Helpers for a kind's health members and metrics: append printf-style
 * text to buf[*len..cap) (false, *len unchanged, when it does not fit),
 * and a JSON string (quoted and escaped). */
bool sl__store_put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool sl__store_put_json_str(char *buf, size_t cap, size_t *len, const char *s);

/* A kind's counters: the uint64_t fields of its stats struct, each a
 * Prometheus counter. sl__store_add_counters adds `from`'s fields to
 * `to`'s; sl__store_put_counters writes them (false when they do not fit). */
struct sl__store_counter {
    const char *name;
    const char *help;
    size_t offset; /* of a uint64_t in the kind's stats struct */
};
void sl__store_add_counters(const struct sl__store_counter *t, size_t n, void *to,
                            const void *from);
bool sl__store_put_counters(char *buf, size_t cap, size_t *len, const struct sl__store_counter *t,
                            size_t n, const void *stats);

/* The configuration's table of kinds (kinds_config.c) and the runtime's
 * (kinds.c) list the same kinds in the same order: index i of one is
 * index i of the other (kinds.c checks it). */
extern const struct sl__store_kind_config sl__store_kind_memory_config;
extern const struct sl__store_kind_config sl__store_kind_redis_config;
extern const struct sl__store_kind_config sl__store_kind_hybrid_config;

extern const struct sl__store_kind sl__store_kind_memory;
extern const struct sl__store_kind sl__store_kind_redis;
extern const struct sl__store_kind sl__store_kind_hybrid;

#endif /* SL_STORE_KIND_H */
