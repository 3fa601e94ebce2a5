/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice.h - the public interface of libsluice, Sluice's rate-limiting library.
 *
 * What it is: every classic rate-limiting algorithm as pure functions over a
 * fixed-size state, a keyed, bounded, hash-flood-resistant state table, the
 * limiter that checks one request against all of its limits at once, and the
 * rules (YAML) that say which limits apply to a request.
 *
 * What it is not: the library never reads a clock (the caller passes `now`,
 * Unix epoch nanoseconds), never does I/O, starts no threads and has no
 * global state. Everything it needs comes through its arguments.
 *
 * Ownership, in one line: an object returned by sl_X_new() belongs to the
 * caller and is released with sl_X_free() (or sl_X_unref() for the
 * reference-counted rules snapshot); every pointer passed in is borrowed for
 * the duration of the call only, unless a comment says otherwise.
 *
 * Errors: functions return 0 (SL_OK) or a negative SL_E* code; sl_strerror()
 * names it. Predicates return bool.
 *
 * Threads: sl_table and sl_limiter are safe to use from many threads at
 * once (sharded locks, no global lock). An sl_rules snapshot is immutable and
 * may be read from any thread while it holds a reference.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks what the shared library exports: it is built with
 * -fvisibility=hidden, so a function declared here without SL_API is not
 * part of the ABI (tests/package/symbols_check.sh compares the two). */
#if defined(__GNUC__) && __GNUC__ >= 4
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

#define SLUICE_VERSION "0.2.0" /* the same as CMake's project version */

/* ---------------------------------------------------------------- errors */

enum {
    SL_OK = 0,
    SL_EINVAL = -1,  /* an argument is invalid (a message says which) */
    SL_ENOMEM = -2,  /* out of memory */
    SL_ETOOBIG = -3, /* a key, descriptor list or request exceeds its cap */
    SL_EFULL = -4,   /* the table is full and its policy is to deny new keys */
    SL_ENOENT = -5,  /* no such key, lease or rule */
    SL_ERANGE = -6,  /* a number is out of its range */
    SL_EPARSE = -7,  /* input text could not be parsed (diagnostics say where) */
};

SL_API const char *sl_strerror(int err);

/* ------------------------------------------------------------------ time */

/* All times are Unix epoch nanoseconds (int64_t), passed in by the caller
 * (docs/contracts.md §Time). Durations are nanoseconds too, suffixed _ns. */
#define SL_NS_PER_MS INT64_C(1000000)
#define SL_NS_PER_S  INT64_C(1000000000)

/* ------------------------------------------------------------ algorithms */

enum sl_algo {
    SL_ALGO_TOKEN_BUCKET = 0,
    SL_ALGO_GCRA,
    SL_ALGO_LEAKY_BUCKET,
    SL_ALGO_FIXED_WINDOW,
    SL_ALGO_SLIDING_WINDOW,
    SL_ALGO_SLIDING_LOG,
    SL_ALGO_CONCURRENCY,
    /* A concurrency limit learned by an adaptive controller
     * (sluice_adaptive.h): the `limit` of a struct sl_adaptive_limit, made
     * by sl_adaptive_limit_init(). Last, so the values above keep theirs. */
    SL_ALGO_ADAPTIVE_CONCURRENCY,
    SL_ALGO_COUNT
};

/* "token_bucket", "gcra", ...; NULL for an unknown value. */
SL_API const char *sl_algo_name(enum sl_algo algo);
/* Parse a name as above; returns SL_EINVAL for an unknown one. */
SL_API int sl_algo_parse(const char *name, enum sl_algo *out);

/* Default cap on the entries of one sliding_log (docs/contracts.md §Algorithms). */
#define SL_LOG_CAP_DEFAULT 10000u
/* Most sub-windows a sliding_window may split its period into (`buckets`);
 * its state is 8 * (buckets + 2) bytes (docs/algorithms.md). */
#define SL_SW_BUCKETS_MAX 1024u

/*
 * The parameters of one limit (docs/contracts.md §Algorithms, §Rules). Fill with sl_limit_init()
 * then set what applies; sl_limit_validate() says whether the combination
 * makes sense, and sl_limit_finish() computes the identity hash.
 */
struct sl_limit {
    enum sl_algo algo;
    /* adaptive_concurrency: set by sl_adaptive_limit_init(), this limit is
     * the `limit` member of a struct sl_adaptive_limit, whose controller
     * configuration follows it (sluice_adaptive.h). In what was padding, so
     * the struct's size and layout are unchanged. */
    bool adaptive;
    uint64_t requests;       /* quota per period; concurrency: max in flight;
                                adaptive_concurrency: max_limit (sl_limit_finish) */
    int64_t period_ns;       /* the period (window) of `requests` */
    int64_t burst;           /* -1: the algorithm's default (see contracts §Algorithms) */
    int64_t delay;           /* leaky_bucket: requests let through undelayed */
    bool nodelay;            /* leaky_bucket: never delay (nginx nodelay) */
    int64_t min_interval_ns; /* sliding_log: minimum spacing, 0 = none */
    int64_t warmup_ns;       /* token_bucket: Guava warm-up period, 0 = none */
    int64_t lease_ns;        /* concurrency, adaptive_concurrency: a slot frees itself after this */
    bool count_rejected;     /* rejected requests are counted too (contracts §Decisions) */
    /* sliding_window: sub-windows per period, 1..SL_SW_BUCKETS_MAX; 0 means
     * 1 (two counters: the current window and the weighted previous one).
     * Placed in what was padding, so the struct's size and layout are
     * unchanged. */
    uint16_t buckets;
    uint32_t log_cap; /* sliding_log: cap on N (SL_LOG_CAP_DEFAULT) */

    /* Identity and reporting; not algorithm parameters. */
    const char *name; /* borrowed; the rules snapshot owns it. May be NULL */
    bool shadow;      /* counted and reported, never enforced */
    uint64_t id;      /* set by sl_limit_finish(): hash of algorithm+params */
    bool named;       /* the rule gave `name` itself (false: derived from its path) */
    /* Given by a request (Envoy's per-descriptor override, CL.THROTTLE),
     * not by the rules: a client picks its parameters, so it may make as
     * many as it likes. The table's summary of evicted debts keeps all of
     * these in one shared array, so they cannot use up the per-limit
     * arrays that keep the rules' limits apart. In what was padding. */
    bool ad_hoc;
};

SL_API void sl_limit_init(struct sl_limit *l);
/* SL_OK, or SL_EINVAL with *why set to a static sentence saying what to fix. */
SL_API int sl_limit_validate(const struct sl_limit *l, const char **why);
/* Compute l->id from the algorithm and its parameters (not name/shadow). */
SL_API void sl_limit_finish(struct sl_limit *l);
/* The number a client sees as the limit (contracts §Decisions `quota`). */
SL_API int64_t sl_limit_quota(const struct sl_limit *l);

enum sl_verdict { SL_ALLOW = 0, SL_DELAY = 1, SL_DENY = 2 };
SL_API const char *sl_verdict_name(enum sl_verdict v); /* "allow", "delay", "deny" */

/* One limit's decision on one request (docs/contracts.md §Decisions). */
struct sl_decision {
    enum sl_verdict verdict;
    int64_t quota;          /* as sl_limit_quota() */
    int64_t remaining;      /* cost-1 requests still allowed now, >= 0 */
    int64_t reset_ns;       /* until the state is whole again, >= 0 */
    int64_t retry_after_ns; /* 0 when admitted; -1 never; else the wait */
    int64_t delay_ns;       /* SL_DELAY: wait this long before acting */
    uint64_t lease;         /* concurrency: the slot taken, when admitted */
};
/* adaptive_concurrency reports its controller's current limit as `quota`
 * and the slots left under it as `remaining` (docs/algorithms.md). */

/* Milliseconds for the wire: rounded up, -1 kept as -1. */
SL_API int64_t sl_ns_to_ms_ceil(int64_t ns);

/*
 * The bare algorithms, for embedders that keep state themselves and for
 * tests. The state is a blob of sl_algo_state_size() bytes (8-byte
 * aligned) that the caller owns; sl_algo_init() makes it a fresh state.
 * sl_algo_decide() decides `cost` (0 peeks) at `now` and records it when
 * admitted (or when rejected with count_rejected).
 */
SL_API size_t sl_algo_state_size(const struct sl_limit *l);
SL_API void sl_algo_init(void *state, const struct sl_limit *l, int64_t now_ns);
SL_API void sl_algo_decide(void *state, const struct sl_limit *l, int64_t now_ns, uint64_t cost,
                           struct sl_decision *d);
/* concurrency: free the slot `lease`; SL_ENOENT if it is not held. */
SL_API int sl_algo_release(void *state, const struct sl_limit *l, int64_t now_ns, uint64_t lease);
/* The same with the request's observed latency (ns): adaptive_concurrency
 * feeds it to its controller; a negative latency frees the slot without a
 * sample. The other algorithms ignore it. */
SL_API int sl_algo_release_latency(void *state, const struct sl_limit *l, int64_t now_ns,
                                   uint64_t lease, int64_t latency_ns);

/* ----------------------------------------------------------- state table */

/* Longest state key accepted; longer keys are SL_ETOOBIG. */
#define SL_KEY_MAX 1024

enum sl_on_full {
    SL_ON_FULL_EVICT = 0, /* drained entries first, then approximately LRU among
                             those not out of quota; a denied key goes last;
                             what an evicted key owed is kept in a summary that
                             its return is restored from (never forgiven);
                             held concurrency leases are never evicted */
    SL_ON_FULL_DENY = 1,  /* new keys are denied (SL_EFULL) */
};

struct sl_table_config {
    size_t max_bytes;   /* hard memory cap for entries, index and logs */
    unsigned shards;    /* power of two; 0 = from max_bytes, 64..2048 */
    uint8_t secret[16]; /* keyed-hash secret; draw it from the kernel */
    enum sl_on_full on_full;
};
SL_API void sl_table_config_init(struct sl_table_config *c);

typedef struct sl_table sl_table;

struct sl_table_stats {
    uint64_t entries;           /* keys tracked now */
    uint64_t bytes;             /* memory in use, <= max_bytes */
    uint64_t evictions;         /* live entries evicted to make room */
    uint64_t evictions_denying; /* of them, entries out of quota (evicted last) */
    uint64_t expired;           /* drained entries dropped by expiry or sweep */
    uint64_t full_denials;      /* new keys refused by SL_ON_FULL_DENY */
    /* The summary of what evicted entries owe (docs/security.md): */
    uint64_t summary_folds;    /* evicted entries it took the debt of */
    uint64_t summary_restores; /* new keys whose state it decided */
    uint64_t summary_cells;    /* its size in cells (8 bytes each) */
    uint64_t summary_used;     /* cells holding a debt not yet whole */
};

SL_API int sl_table_new(const struct sl_table_config *c, sl_table **out);
SL_API void sl_table_free(sl_table *t);

/* Decide one request of `cost` on one limit for `key` (the hot path). */
SL_API int sl_table_check(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                          int64_t now_ns, uint64_t cost, struct sl_decision *d);
/* One check of a batch: the arguments of sl_table_check, and its results. */
struct sl_table_item {
    const void *key;
    size_t key_len;
    const struct sl_limit *limit;
    int64_t now_ns;
    uint64_t cost;
    struct sl_decision decision; /* out */
    int rc;                      /* out: what sl_table_check would return */
};
/* The same as sl_table_check on items[0], items[1], ... in that order, but
 * faster over a large table: the keys' memory is fetched in parallel (a
 * server answering pipelined requests should batch them). Returns SL_EINVAL
 * for a NULL table, or NULL items with n > 0, else 0; each item has its own
 * rc. */
SL_API int sl_table_check_batch(sl_table *t, struct sl_table_item *items, size_t n);
/* Report the state as a cost-0 check would, without creating the key. */
SL_API int sl_table_peek(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                         int64_t now_ns, struct sl_decision *d);
/* Forget `key`: its next check starts fresh. SL_ENOENT if absent. */
SL_API int sl_table_reset(sl_table *t, const void *key, size_t key_len);
/* concurrency: release `lease` held on `key`. */
SL_API int sl_table_release(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                            int64_t now_ns, uint64_t lease);
/* Drop every drained entry; returns how many were dropped. */
SL_API size_t sl_table_sweep(sl_table *t, int64_t now_ns);
SL_API void sl_table_stats(const sl_table *t, struct sl_table_stats *out);

/* ------------------------------------------------------------- requests */

/* Caps on one request (SL_ETOOBIG beyond them). */
#define SL_MAX_DESCRIPTORS 32
#define SL_MAX_ENTRIES     16
#define SL_MAX_LIMITS      8 /* limits applying to one descriptor */

/* Strings in requests are byte ranges, not NUL-terminated. */
struct sl_str {
    const char *p;
    size_t len;
};

struct sl_entry {
    struct sl_str key;
    struct sl_str value;
};

struct sl_descriptor {
    const struct sl_entry *entries;
    size_t n_entries;
    int64_t hits; /* this descriptor's cost; -1: the request's */
    /* A limit the request brings for this descriptor, replacing what the
     * rules say (Envoy's per-descriptor `limit` override): applied when the
     * domain has rules, to a counter keyed by the descriptor's entries and
     * the limit itself, never in shadow mode. NULL: the rules decide.
     * Borrowed; finished with sl_limit_finish(). */
    const struct sl_limit *limit;
};

struct sl_request {
    struct sl_str domain;
    const struct sl_descriptor *descriptors;
    size_t n_descriptors;
    uint64_t hits; /* cost of the request; 0 peeks */
    int64_t now_ns;
};

/* One descriptor's status (contracts §Decisions: the denying limit, else the lowest remaining). */
struct sl_status {
    struct sl_decision d;
    const struct sl_limit *limit; /* the limit reported; NULL: none applies */
    bool shadow_denied;           /* a shadow limit would have denied */
    bool unlimited;               /* the descriptor's rule is `unlimited` */
    bool detailed;                /* the descriptor's rule asks for detailed_metric */
    /* No rule applies to the descriptor and its domain says on_unmatched:
     * deny: denied (retry_after_ns -1: retrying does not help), limit NULL. */
    bool unmatched;
};

/* Concurrency leases taken by one request, as one printable token (hex and
 * '.'), which sl_limiter_release() takes back. At most SL_MAX_LEASES
 * concurrency limits per request. */
#define SL_MAX_LEASES 8
#define SL_LEASE_MAX  (SL_MAX_LEASES * 48)

struct sl_result {
    enum sl_verdict verdict; /* deny if any deny, else delay if any, else allow */
    int64_t delay_ns;        /* the longest delay */
    size_t n_statuses;       /* == request's n_descriptors */
    struct sl_status statuses[SL_MAX_DESCRIPTORS];
    char lease[SL_LEASE_MAX]; /* NUL-terminated; "" when no lease taken */
};

/* ------------------------------------------------------------- rules */

/*
 * A rules snapshot: every domain's descriptors and their limits, compiled and
 * immutable. Built with a builder from YAML texts (files and the rules
 * database); shared between threads by reference count.
 */
typedef struct sl_rules sl_rules;
typedef struct sl_rules_builder sl_rules_builder;

/* Where a rules text comes from: database rules override file rules for the
 * same descriptor. */
enum sl_rules_source { SL_SRC_FILE = 0, SL_SRC_DB = 1 };

SL_API sl_rules_builder *sl_rules_builder_new(void);
SL_API void sl_rules_builder_free(sl_rules_builder *b);
/* Parse `text` (YAML, one domain per document) and add it. Diagnostics are
 * collected, all of them, as "origin:line:col: message". */
SL_API int sl_rules_builder_add_yaml(sl_rules_builder *b, const char *text, size_t len,
                                     const char *origin, enum sl_rules_source src);
SL_API size_t sl_rules_builder_ndiags(const sl_rules_builder *b);
SL_API const char *sl_rules_builder_diag(const sl_rules_builder *b, size_t i);
/* Compile; SL_EPARSE (and nothing built) if there is any diagnostic. */
SL_API int sl_rules_build(sl_rules_builder *b, sl_rules **out);

SL_API sl_rules *sl_rules_ref(sl_rules *r);
SL_API void sl_rules_unref(sl_rules *r);

/* The limits that apply to one descriptor, as matching resolved them. */
struct sl_match {
    const struct sl_limit *limits[SL_MAX_LIMITS];
    size_t n_limits;
    /* The bytes that identify the counter: domain and the matched entries
     * (with the request's values, or the rule's for share_threshold). */
    char key[SL_KEY_MAX];
    size_t key_len;
    bool unlimited;
    const char *detailed_metric; /* metric label, NULL when not detailed */
    /* Added by the rules , all borrowed from the snapshot: */
    bool quota_mode;           /* Envoy quota_mode: deny only if all quota descriptors do */
    bool value_to_metric;      /* Envoy value_to_metric: put request values in metric names */
    const char *metadata_json; /* the rule's `metadata` as a JSON object, or NULL */
    const char *rule_path;     /* "domain.key_value.key2" of the matched rule, or NULL */
};

/* Resolve descriptor `i` of `req`; n_limits 0 when no rule applies. */
SL_API int sl_rules_match(const sl_rules *r, const struct sl_request *req, size_t i,
                          struct sl_match *out);
SL_API bool sl_rules_has_domain(const sl_rules *r, struct sl_str domain);

/* Call fn for every limit of every rule, domains in name order and rules
 * in file order: `path` is the rule's "domain.key_value.key2" (as metrics
 * and envoyproxy/ratelimit's /rlconfig name it), `quota_mode` its Envoy
 * flag, `unlimited` true (and l NULL) for an unlimited rule. For operators'
 * listings; not on any hot path. */
SL_API void sl_rules_foreach_limit(const sl_rules *r,
                                   void (*fn)(void *arg, const char *path, const struct sl_limit *l,
                                              bool quota_mode, bool unlimited),
                                   void *arg);

/*
 * Atomic publication of snapshots: one writer swaps, many readers read with
 * no lock on the fast path. A reader is per thread.
 */
typedef struct sl_rules_slot sl_rules_slot;
typedef struct sl_rules_reader sl_rules_reader;
SL_API sl_rules_slot *sl_rules_slot_new(sl_rules *initial); /* takes the reference */
SL_API void sl_rules_slot_free(sl_rules_slot *s);
SL_API void sl_rules_slot_publish(sl_rules_slot *s, sl_rules *r); /* takes the reference */
SL_API sl_rules_reader *sl_rules_reader_new(sl_rules_slot *s);
SL_API void sl_rules_reader_free(sl_rules_reader *rd);
/* The newest snapshot; valid until the next call on this reader. */
SL_API const sl_rules *sl_rules_reader_get(sl_rules_reader *rd);

/* ------------------------------------------------------------- limiter */

typedef struct sl_limiter sl_limiter;

struct sl_limiter_config {
    struct sl_table_config table;
};
SL_API void sl_limiter_config_init(struct sl_limiter_config *c);

SL_API int sl_limiter_new(const struct sl_limiter_config *c, sl_limiter **out);
SL_API void sl_limiter_free(sl_limiter *lim);
SL_API sl_table *sl_limiter_table(sl_limiter *lim);

/*
 * Check `req` against `rules`: all limits of all descriptors at once,
 * all-or-nothing (if any limit denies, nothing is consumed anywhere except
 * count_rejected limits, which record the rejected request). Shadow limits
 * are counted and reported but never deny. Fills `res` per docs/contracts.md §Decisions.
 */
SL_API int sl_limiter_check(sl_limiter *lim, const sl_rules *rules, const struct sl_request *req,
                            struct sl_result *res);
/* The same over descriptors already resolved (one sl_match per descriptor). */
SL_API int sl_limiter_check_matched(sl_limiter *lim, const struct sl_match *m, size_t n,
                                    const struct sl_request *req, struct sl_result *res);
/* One request of a batch (sl_limiter_check_batch): with `rules`, decided
 * as sl_limiter_check(lim, rules, req, res); with `rules` NULL, as
 * sl_limiter_check_matched(lim, m, n, req, res). `rc` is what that call
 * returns. */
struct sl_limiter_item {
    const sl_rules *rules;
    const struct sl_match *m;
    size_t n;
    const struct sl_request *req;
    struct sl_result *res;
    int rc;
};
/* Decide items[0..n) in order, each exactly as its own call would (the same
 * results, the same state afterwards, an error in one item touching no
 * other), with the table memory of a group of items fetched together first
 * when the table is larger than the caches: a server answering pipelined
 * requests should decide them here. SL_EINVAL when lim is NULL or items is
 * NULL with n > 0; else SL_OK, each item's outcome in its rc. */
SL_API int sl_limiter_check_batch(sl_limiter *lim, struct sl_limiter_item *items, size_t n);
/* Release every slot named by a lease token from sl_result.lease.
 * SL_EINVAL for a malformed token, SL_ENOENT if nothing was held. */
SL_API int sl_limiter_release(sl_limiter *lim, const char *lease, size_t len, int64_t now_ns);
/* The same, reporting how long the request took (`latency_ns`, >= 0) to
 * every adaptive_concurrency slot of the token, whose controller takes it
 * as a sample; a negative latency is none (the slot is freed, no sample),
 * which is what sl_limiter_release() passes. Other slots ignore it. */
SL_API int sl_limiter_release_latency(sl_limiter *lim, const char *lease, size_t len,
                                      int64_t now_ns, int64_t latency_ns);
/* Forget the state of every limit of the resolved descriptors (admin reset;
 * inspecting is sl_limiter_check_matched with hits 0). SL_ENOENT if none
 * was tracked. */
SL_API int sl_limiter_reset(sl_limiter *lim, const struct sl_match *m, size_t n);

/* ------------------------------------------------------------- helpers */

/* Parse a duration with its unit ("250ms", "90s", "5m", "1h", "1d", "1w");
 * a bare number is SL_EINVAL. */
SL_API int sl_duration_parse(const char *s, size_t len, int64_t *out_ns);

/* SipHash-2-4 of `data` under the 16-byte key `k` (64 and 128-bit outputs). */
SL_API uint64_t sl_siphash(const uint8_t k[16], const void *data, size_t len);
SL_API void sl_siphash128(const uint8_t k[16], const void *data, size_t len, uint64_t out[2]);
/* SipHash-1-3, 128-bit output: the state table's keyed hash (the strength
 * CPython and Rust use against hash flooding; see docs/architecture.md). */
SL_API void sl_siphash13_128(const uint8_t k[16], const void *data, size_t len, uint64_t out[2]);

#ifdef __cplusplus
}
#endif
#endif /* SLUICE_H */
