/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_int.h - the internal shape of rules: the YAML node tree with
 * positions, the compiled descriptor tree of one domain, and the snapshot.
 *
 * Ownership: an sl_rules snapshot owns every domain, node, limit and string
 * below it; nothing in it changes after sl_rules_build() returns, so any
 * thread holding a reference may read it without a lock. The builder owns
 * the domains it has parsed until sl_rules_build() moves them.
 *
 * Not here: parsing of durations (lib/util/duration.c) and the decisions
 * themselves (lib/algo, lib/limiter.c).
 */
#ifndef SL_RULES_INT_H
#define SL_RULES_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "sluice.h"
#include "sluice_adaptive.h"
#include "sluice_int.h"

/* ------------------------------------------------------------ YAML tree */

enum sl__ytype { SL__Y_SCALAR, SL__Y_MAP, SL__Y_SEQ };

/* One YAML node with the 1-based line and column where it starts. A map's
 * kids alternate key, value. Scalars are NUL-terminated; `plain` is false
 * for quoted scalars (so "10" is a string, 10 a number). */
struct sl__ynode {
    enum sl__ytype type;
    int line;
    int col;
    char *text;
    size_t len;
    bool plain;
    struct sl__ynode **kids;
    size_t n_kids;
    size_t cap_kids; /* kids allocated (grown by doubling) */
};

/* Caps that keep hostile input bounded (fuzzing, admin API). */
#define SL__YAML_MAX_DEPTH 64
#define SL__YAML_MAX_NODES 200000

/* Parse `text` into documents. Returns SL_OK with *docs (caller frees with
 * sl__ydocs_free), or SL_EPARSE with a message and position in err/line/col. */
int sl__yaml_load(const char *text, size_t len, struct sl__ynode ***docs, size_t *n_docs, char *err,
                  size_t err_len, int *line, int *col);
void sl__ynode_free(struct sl__ynode *n);
void sl__ydocs_free(struct sl__ynode **docs, size_t n);

/* ------------------------------------------------------- compiled rules */

/* One limit with what the limiter's table does not need to know. `l` is
 * first so that a `const struct sl_limit *` handed out by sl_rules_match()
 * can be turned back into its rule limit (sl__rlimit_of); it is also the
 * `limit` of `al`, so that an adaptive_concurrency limit carries its
 * controller's configuration after it (sluice_adaptive.h). */
struct sl__rlimit {
    union {
        struct sl_limit l;
        struct sl_adaptive_limit al;
    };
    char *name;      /* owned; l.name points here */
    char **replaces; /* names of limits this one replaces */
    size_t n_replaces;
    bool deny_all; /* Envoy requests_per_unit: 0: every request is denied */
};

static inline const struct sl__rlimit *sl__rlimit_of(const struct sl_limit *l)
{
    return (const struct sl__rlimit *)(const void *)l;
}

/* One descriptor rule: key, optional value (exact or with '*'), its limits
 * and its children, which are in three groups searched in order of
 * precedence: exact values (sorted by key then value), wildcards (file
 * order), key-only defaults (sorted by key). */
struct sl__rnode {
    char *key;
    char *value; /* NULL for a key-only default rule */
    bool wildcard;
    bool share_threshold;
    bool shadow;
    bool quota_mode;
    bool detailed_metric;
    bool value_to_metric;
    bool unlimited;
    bool has_policy; /* rate_limit or limits given (db override decides on it) */
    struct sl__rlimit *limits;
    size_t n_limits;
    char *metadata_json; /* metadata as a JSON object text, or NULL */
    char *path;          /* "domain.key_value.key2": default names, metrics */
    int line;
    int col;

    struct sl__rnode **kids; /* all children, in file order, while building */
    size_t n_kids;
    size_t cap_kids;
    struct sl__rnode **exact; /* after sl__rnode_index(): views into kids */
    size_t n_exact;
    struct sl__rnode **wild;
    size_t n_wild;
    struct sl__rnode **keyonly;
    size_t n_keyonly;
};

/* A domain's on_unmatched: what a descriptor that no rule applies to gets.
 * UNSET is allow (as Envoy does); a database text that sets it overrides
 * the file's. */
enum sl__unmatched { SL__UNMATCHED_UNSET = 0, SL__UNMATCHED_ALLOW, SL__UNMATCHED_DENY };

struct sl__rdomain {
    char *name;
    char *origin; /* where it was defined, "file:line:col" */
    enum sl_rules_source src;
    size_t seq;    /* order in which the builder received it */
    bool detailed; /* some rule asks for detailed_metric (set when built) */
    enum sl__unmatched unmatched;
    bool rlqs;             /* rlqs: true - served over RLQS, its limits rates only */
    struct sl__rnode root; /* only its kids are used */
};

struct sl_rules {
    atomic_long refs;
    struct sl__rdomain **domains; /* sorted by name */
    size_t n_domains;
};

/* ------------------------------------------------------- build work */

/* Work counter for the scaling test (tests/unit/test_rules_scale.c builds
 * the library again with SL_RULES_COUNT_OPS): comparisons of descriptor
 * identities and of domain names while building, and pointers moved when
 * an array grows. Compiled out otherwise, so the library keeps no global
 * state. */
#ifdef SL_RULES_COUNT_OPS
extern unsigned long long sl__rules_ops;
#define SL__RULES_OPS(n) (sl__rules_ops += (n))
#else
#define SL__RULES_OPS(n) ((void)0)
#endif

/* Order of descriptor identities: key, then value, a key-only rule (no
 * value) first. Two rules with the same identity are the same descriptor
 * (a duplicate within one text, merged across texts). */
int sl__rnode_cmp_identity(const struct sl__rnode *a, const struct sl__rnode *b);
/* Append `kid` to `parent`'s children, doubling the array when full.
 * SL_OK or SL_ENOMEM. */
int sl__rnode_add_kid(struct sl__rnode *parent, struct sl__rnode *kid);
/* Grow `*v` (of `*cap` elements of `size` bytes) to hold at least `need`,
 * by doubling. SL_OK or SL_ENOMEM (then *v is unchanged). */
int sl__grow(void **v, size_t *cap, size_t need, size_t size);

/* A list of diagnostics, "origin:line:col: message" each. */
struct sl__diags {
    char **v;
    size_t n;
    size_t cap;
    bool oom;
};

void sl__diag(struct sl__diags *d, const char *origin, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void sl__diags_free(struct sl__diags *d);

/* Turn the documents of one text into domains (appended to *out, which the
 * caller frees with sl__rdomain_free). Diagnostics go to `d`. */
int sl__rules_compile_docs(struct sl__ynode **docs, size_t n_docs, const char *origin,
                           enum sl_rules_source src, struct sl__diags *d, struct sl__rdomain ***out,
                           size_t *n_out);

void sl__rnode_free_kids(struct sl__rnode *n);
void sl__rdomain_free(struct sl__rdomain *dom);
/* Sort a node's children into the exact / wildcard / key-only views,
 * recursively. SL_OK or SL_ENOMEM. */
int sl__rnode_index(struct sl__rnode *n);

/* The domain named `name` in `r`, or NULL. */
const struct sl__rdomain *sl__rules_find_domain(const sl_rules *r, struct sl_str name);

/* '*' matches any run of bytes, everything else itself. */
bool sl__glob_match(const char *pat, const char *s, size_t len);

/* ------------------------------------------- the limiter's batches */

struct sl__fp;
/* sl_limiter_check() of a request of one descriptor (req->n_descriptors
 * 1, req->descriptors[0] valid) already matched: m0 is what
 * sl_rules_match(rules, req, 0, m0) gave (changed here as the resolution
 * changes it), fp[0..nfp) the fingerprints of its limits in order (or
 * NULL: hashed here). The same result and state as sl_limiter_check(). */
int sl__limiter_check_prematched(sl_limiter *lim, const sl_rules *rules,
                                 const struct sl_request *req, struct sl_match *m0,
                                 const struct sl__fp *fp, size_t nfp, struct sl_result *res);
/* sl_limiter_check_matched() of one match m0 whose limits' fingerprints
 * fp[0..nfp) are known (NULL: hashed; a count that is not m0's limits:
 * hashed). In lib/limiter.c. */
int sl__limiter_check_hinted(sl_limiter *lim, const struct sl_match *m0,
                             const struct sl_request *req, struct sl_result *res,
                             const struct sl__fp *fp, size_t nfp);

#endif /* SL_RULES_INT_H */
