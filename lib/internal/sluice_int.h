/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sluice_int.h - the few internals of libsluice that the layers built on it
 * need, and nothing more (internal; not installed).
 *
 * The library's private folder (lib/) is visible to lib/ alone. A store
 * that decides elsewhere than the library's table (the Redis store) must
 * still resolve a request exactly as sl_limiter_check() does and report a
 * descriptor's status exactly as the memory store does, and the rules
 * database stores one domain per row: those are the functions below. The
 * saturating arithmetic they share is in sluice_sat.h beside this file.
 *
 * Rules for this header: a function goes here only when a second layer
 * needs it and copying it would let the two drift; every one is pure and
 * takes its time from the caller, like the rest of the library.
 */
#ifndef SL_SLUICE_INT_H
#define SL_SLUICE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* ----------------------------------------------------------- resolution */

/* What resolving a request leaves for reporting its result. */
struct sl__resolved {
    const struct sl_limit *banned[SL_MAX_DESCRIPTORS]; /* deny-all limits taken out */
    bool unlimited[SL_MAX_DESCRIPTORS];                /* the rule is `unlimited` */
    bool detailed[SL_MAX_DESCRIPTORS];                 /* the rule asks for detailed_metric */
    /* no rule applies, in a domain whose on_unmatched is deny: denied */
    bool unmatched[SL_MAX_DESCRIPTORS];
    bool deny_all; /* the whole request must be denied (decide it as a peek) */
};

/* The resolution sl_limiter_check() makes before it decides, shared with
 * the stores that decide elsewhere: match every descriptor of `req` into
 * m[0..n), note the descriptors no rule applies to in a domain whose
 * on_unmatched is deny (they deny the request), drop what `replaces`
 * replaces, take deny-all (requests_per_unit: 0) limits out into
 * rv->banned[i], and note what the report needs in *rv. */
int sl__rules_resolve(const sl_rules *rules, const struct sl_request *req, struct sl_match *m,
                      struct sl__resolved *rv);
/* After deciding: report the deny-all limits, the unmatched descriptors,
 * the unlimited and detailed rules and, with deny_all, the request as
 * denied holding nothing. */
void sl__rules_finish(const struct sl__resolved *rv, int64_t now_ns, struct sl_result *res);

/* Does some rule of `domain` ask for detailed_metric? (The server then
 * makes the per-request metric labels; one lookup, no allocation.) */
bool sl__rules_domain_detailed(const sl_rules *r, struct sl_str domain);
/* Match entries e[0..n) of `domain` as one descriptor whose entries may
 * come in any order (a map: Envoy's rate limit quota bucket ids): the
 * first order, trying e's order at each level, whose entries are a path of
 * the rules tree ending at a rule with limits or unlimited - as
 * sl_rules_match() would match the descriptor in that order, counter key
 * included. The search stops after SL__RULES_UNORDERED_BUDGET lookups
 * (nothing matched then). n_limits 0 when no rule applies. */
#define SL__RULES_UNORDERED_BUDGET 4096u
int sl__rules_match_unordered(const sl_rules *r, struct sl_str domain, const struct sl_entry *e,
                              size_t n, struct sl_match *out);
/* Does `domain` say on_unmatched: deny? */
bool sl__rules_domain_denies_unmatched(const sl_rules *r, struct sl_str domain);
/* Is `l`, a limit sl_rules_match() handed out, Envoy's requests_per_unit: 0
 * (every request denied)? */
bool sl__rules_limit_denies_all(const struct sl_limit *l);

/* What a snapshot holds, for the reload's log line and for refusing a
 * truncated rules file: its domains, its descriptor rules (every level),
 * and the first domain (by name) that has no descriptor at all (and does
 * not deny what is unmatched: that one denies everything), with where
 * it was defined ("file:line:col"), or NULLs. Borrowed from the snapshot. */
struct sl__rules_census {
    size_t domains;
    size_t descriptors;
    const char *empty_domain;
    const char *empty_origin;
};
void sl__rules_census(const sl_rules *r, struct sl__rules_census *out);

/* The first domain (by name) that holds an adaptive_concurrency limit and
 * a limit for which `other` is true, and where it was defined in *origin;
 * NULL when none does. For a store that decides adaptive limits on each
 * node and `other` ones elsewhere: one request cannot be decided in both
 * places all-or-nothing, so such a domain is refused at load. */
/* A limit a quota assignment (Envoy's RLQS token bucket) can carry: a rate
 * over a period, not concurrency, adaptive concurrency or a sliding_log's
 * minimum spacing. */
bool sl__limit_is_rate(const struct sl_limit *l);
/* The first domain that says rlqs: true and holds a limit that is no rate
 * (its origin, that limit's name and algorithm), or NULL: a database text
 * may add such a limit to a file's domain after each text was checked. */
const char *sl__rules_rlqs_nonrate(const sl_rules *r, const char **origin, const char **limit,
                                   enum sl_algo *algo);
const char *sl__rules_adaptive_mix(const sl_rules *r, bool (*other)(const struct sl_limit *l),
                                   const char **origin);

/* ------------------------------------------------------------ reporting */

/* The decision `d` of limit `l` as reported: a shadow limit never denies or
 * delays (it is counted and shown, and *shadow_denied is set when it would
 * have denied). */
struct sl_decision sl__report_shadow(struct sl_decision d, const struct sl_limit *l,
                                     bool *shadow_denied);

/* Does (a, la) rank above the current pick (b, lb) for a descriptor's
 * status? Deny (the longest retry; -1, never, is the longest) > delay (the
 * longest) > the lowest remaining (tie: the longer period). */
bool sl__report_ranks_above(const struct sl_decision *a, const struct sl_limit *la,
                            const struct sl_decision *b, const struct sl_limit *lb);

/* ------------------------------------------------- stores with many nodes */

/* A store that shares a limiter's counts with other nodes (the hybrid
 * store) must know what every decision recorded, and must add what the
 * other nodes recorded. */

/* Called, under the limiter's shard locks, for every limit state a
 * decision records (committed): the descriptor's match, the limit, the
 * cost recorded and the decision's time. It must not call the limiter. */
typedef void (*sl__commit_fn)(void *arg, const struct sl_match *m, const struct sl_limit *l,
                              uint64_t cost, int64_t now_ns);
/* Set (fn NULL: clear) the one observer of `lim`'s commits. Not thread-safe
 * against decisions in progress: set it before deciding. */
void sl__limiter_on_commit(sl_limiter *lim, sl__commit_fn fn, void *arg);
/* Record `amount` more on limit `l` of the state keyed by match key
 * key[0..key_len) (the key sl_limiter_check_matched uses with
 * m->key), at `now_ns`, whatever the limit says (as a count_rejected
 * limit records a rejected request): windows count it in the window of
 * `now_ns` (or the state's last time, if later), buckets fill by it. The
 * observer is not called. SL_OK; SL_EINVAL for sliding_log and
 * concurrency (their state is not an amount); SL_EFULL/SL_ENOMEM/
 * SL_ETOOBIG as a check creating the key. */
int sl__limiter_absorb(sl_limiter *lim, const char *key, size_t key_len, const struct sl_limit *l,
                       int64_t now_ns, uint64_t amount);

/* ------------------------------------------------------ rules builders */

/* The names of the domains a builder holds so far (for the rules database,
 * which stores one domain per row). Returns how many there are; fills at
 * most `max` borrowed names. */
size_t sl__rules_builder_domains(const sl_rules_builder *b, const char **names, size_t max);
/* The descriptor rules a builder holds so far, at every level, before any
 * merge (what one text brings: the admin API caps it). */
size_t sl__rules_builder_descriptors(const sl_rules_builder *b);
/* Record one more diagnostic in a builder (its build then fails). */
void sl__rules_builder_diag(sl_rules_builder *b, const char *origin, int line, int col,
                            const char *msg);

/* A copy of s (or of its first n bytes) from malloc; NULL when out of memory. */
char *sl__strdup(const char *s);
char *sl__strndup(const char *s, size_t n);

#endif /* SL_SLUICE_INT_H */
