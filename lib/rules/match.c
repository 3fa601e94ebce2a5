/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * match.c - resolve one request descriptor to the rule that applies, the
 * Envoy way: the rule must have the same depth as the descriptor; at each
 * level an exact value beats a wildcard beats a key-only default, and the
 * search never backtracks. Also builds the counter key: domain and matched
 * entries, length-prefixed so no two distinct descriptors share a key.
 *
 * Hot path: no allocation, no lock (the snapshot is immutable); binary
 * search over exact values, linear over the (few) wildcards and defaults.
 * Also the listings of a snapshot (its limits, its census), off the hot
 * path. It does not decide anything (the limiter does).
 */
#include <stdlib.h>
#include <string.h>

#include "rules/rules_int.h"

static int cmp_cstr(const char *a, const char *b)
{
    return strcmp(a, b);
}

static int by_key_value(const void *a, const void *b)
{
    const struct sl__rnode *x = *(struct sl__rnode *const *)a;
    const struct sl__rnode *y = *(struct sl__rnode *const *)b;
    int c = cmp_cstr(x->key, y->key);

    if (c != 0 || x->value == NULL || y->value == NULL)
        return c;
    return cmp_cstr(x->value, y->value);
}

static struct sl__rnode **group(struct sl__rnode *n, int which, size_t *count)
{
    struct sl__rnode **v = calloc(n->n_kids ? n->n_kids : 1, sizeof(*v));
    size_t k = 0;

    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n->n_kids; i++) {
        struct sl__rnode *c = n->kids[i];
        int kind = c->value == NULL ? 2 : c->wildcard ? 1 : 0;
        if (kind == which)
            v[k++] = c;
    }
    *count = k;
    return v;
}

int sl__rnode_index(struct sl__rnode *n)
{
    free(n->exact);
    free(n->wild);
    free(n->keyonly);
    n->exact = group(n, 0, &n->n_exact);
    n->wild = group(n, 1, &n->n_wild);
    n->keyonly = group(n, 2, &n->n_keyonly);
    if (n->exact == NULL || n->wild == NULL || n->keyonly == NULL)
        return SL_ENOMEM;
    qsort(n->exact, n->n_exact, sizeof(*n->exact), by_key_value);
    qsort(n->keyonly, n->n_keyonly, sizeof(*n->keyonly), by_key_value);
    for (size_t i = 0; i < n->n_kids; i++) {
        int rc = sl__rnode_index(n->kids[i]);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

/* Compare a request string with a rule's NUL-terminated one. */
static int cmp_str(struct sl_str s, const char *c)
{
    size_t cl = strlen(c);
    int r = memcmp(s.p, c, s.len < cl ? s.len : cl);

    if (r != 0)
        return r;
    return s.len < cl ? -1 : s.len > cl;
}

static struct sl__rnode *find_sorted(struct sl__rnode **v, size_t n, const struct sl_entry *e,
                                     bool with_value)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(e->key, v[mid]->key);
        if (c == 0 && with_value)
            c = cmp_str(e->value, v[mid]->value);
        if (c == 0)
            return v[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static struct sl__rnode *find_wild(const struct sl__rnode *n, const struct sl_entry *e)
{
    for (size_t i = 0; i < n->n_wild; i++) {
        struct sl__rnode *w = n->wild[i];
        if (cmp_str(e->key, w->key) == 0 && sl__glob_match(w->value, e->value.p, e->value.len))
            return w;
    }
    return NULL;
}

static struct sl__rnode *find_kid(const struct sl__rnode *n, const struct sl_entry *e)
{
    struct sl__rnode *k = find_sorted(n->exact, n->n_exact, e, true);

    if (k == NULL)
        k = find_wild(n, e);
    if (k == NULL)
        k = find_sorted(n->keyonly, n->n_keyonly, e, false);
    return k;
}

const struct sl__rdomain *sl__rules_find_domain(const sl_rules *r, struct sl_str name)
{
    size_t lo = 0, hi = r->n_domains;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(name, r->domains[mid]->name);
        if (c == 0)
            return r->domains[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

bool sl_rules_has_domain(const sl_rules *r, struct sl_str domain)
{
    return r != NULL && sl__rules_find_domain(r, domain) != NULL;
}

/* Append a tag byte, a 16-bit big-endian length and the bytes. */
static bool put(struct sl_match *m, char tag, const char *p, size_t len)
{
    if (len > 0xffff || m->key_len + 3 + len > SL_KEY_MAX)
        return false;
    m->key[m->key_len++] = tag;
    m->key[m->key_len++] = (char)(len >> 8);
    m->key[m->key_len++] = (char)(len & 0xff);
    memcpy(m->key + m->key_len, p, len);
    m->key_len += len;
    return true;
}

static int build_key(struct sl_match *m, struct sl_str domain, const struct sl_descriptor *d,
                     const struct sl__rnode *const *path)
{
    bool ok = put(m, 'd', domain.p, domain.len);

    for (size_t i = 0; ok && i < d->n_entries; i++) {
        const struct sl__rnode *n = path[i];
        ok = put(m, 'k', d->entries[i].key.p, d->entries[i].key.len);
        if (ok && n->share_threshold)
            ok = put(m, 'p', n->value, strlen(n->value));
        else if (ok)
            ok = put(m, 'v', d->entries[i].value.p, d->entries[i].value.len);
    }
    return ok ? SL_OK : SL_ETOOBIG;
}

/* A descriptor that brings its own limit (Envoy's override): the counter
 * is keyed by every entry with the request's values, whatever rule would
 * match, and the limit is the request's (never shadow). */
static int match_override(struct sl_match *m, struct sl_str domain, const struct sl_descriptor *d)
{
    bool ok = put(m, 'd', domain.p, domain.len) && put(m, 'o', "", 0);

    for (size_t i = 0; ok && i < d->n_entries; i++)
        ok = put(m, 'k', d->entries[i].key.p, d->entries[i].key.len) &&
             put(m, 'v', d->entries[i].value.p, d->entries[i].value.len);
    if (!ok) {
        m->key_len = 0;
        return SL_ETOOBIG;
    }
    m->limits[0] = d->limit;
    m->n_limits = 1;
    return SL_OK;
}

static void fill(struct sl_match *m, const struct sl__rnode *n)
{
    m->unlimited = n->unlimited;
    m->quota_mode = n->quota_mode;
    m->value_to_metric = n->value_to_metric;
    m->detailed_metric = n->detailed_metric ? n->path : NULL;
    m->metadata_json = n->metadata_json;
    m->rule_path = n->path;
    for (size_t i = 0; i < n->n_limits; i++)
        m->limits[i] = &n->limits[i].l;
    m->n_limits = n->n_limits;
}

int sl_rules_match(const sl_rules *r, const struct sl_request *req, size_t i, struct sl_match *out)
{
    const struct sl__rnode *path[SL_MAX_ENTRIES];
    const struct sl__rdomain *dom;
    const struct sl_descriptor *d;
    const struct sl__rnode *n;

    out->n_limits = 0;
    out->key_len = 0;
    out->unlimited = false;
    out->quota_mode = false;
    out->value_to_metric = false;
    out->detailed_metric = NULL;
    out->metadata_json = NULL;
    out->rule_path = NULL;
    if (r == NULL || req == NULL || i >= req->n_descriptors)
        return SL_EINVAL;
    d = &req->descriptors[i];
    if (d->n_entries > SL_MAX_ENTRIES)
        return SL_ETOOBIG;
    dom = sl__rules_find_domain(r, req->domain);
    if (dom == NULL)
        return SL_OK;
    if (d->limit != NULL)
        return match_override(out, req->domain, d);
    if (d->n_entries == 0)
        return SL_OK;
    n = &dom->root;
    for (size_t k = 0; k < d->n_entries; k++) {
        n = find_kid(n, &d->entries[k]);
        if (n == NULL)
            return SL_OK;
        path[k] = n;
    }
    if (n->n_limits == 0 && !n->unlimited)
        return SL_OK;
    if (build_key(out, req->domain, d, path) != SL_OK) {
        out->key_len = 0;
        return SL_ETOOBIG;
    }
    fill(out, n);
    return SL_OK;
}

/* The depth-first search of sl__rules_match_unordered: entries e[0..n)
 * not yet used (used[]), placed in order[0..depth) along path[]. */
struct unordered {
    const struct sl_entry *e;
    size_t n;
    bool used[SL_MAX_ENTRIES];
    struct sl_entry order[SL_MAX_ENTRIES];
    const struct sl__rnode *path[SL_MAX_ENTRIES];
    unsigned budget; /* find_kid calls left */
};

static const struct sl__rnode *search(struct unordered *u, const struct sl__rnode *cur,
                                      size_t depth)
{
    if (depth == u->n)
        return cur->n_limits > 0 || cur->unlimited ? cur : NULL;
    for (size_t i = 0; i < u->n; i++) {
        if (u->used[i] || u->budget == 0)
            continue;
        u->budget--;
        const struct sl__rnode *kid = find_kid(cur, &u->e[i]);
        if (kid == NULL)
            continue;
        u->used[i] = true;
        u->order[depth] = u->e[i];
        u->path[depth] = kid;
        const struct sl__rnode *hit = search(u, kid, depth + 1);
        u->used[i] = false;
        if (hit != NULL)
            return hit;
    }
    return NULL;
}

int sl__rules_match_unordered(const sl_rules *r, struct sl_str domain, const struct sl_entry *e,
                              size_t n, struct sl_match *out)
{
    static _Thread_local struct unordered u;
    const struct sl__rdomain *dom;
    const struct sl__rnode *hit;
    struct sl_descriptor d;

    out->n_limits = 0;
    out->key_len = 0;
    out->unlimited = false;
    out->quota_mode = false;
    out->value_to_metric = false;
    out->detailed_metric = NULL;
    out->metadata_json = NULL;
    out->rule_path = NULL;
    if (r == NULL || n == 0 || n > SL_MAX_ENTRIES)
        return n > SL_MAX_ENTRIES ? SL_ETOOBIG : SL_EINVAL;
    if ((dom = sl__rules_find_domain(r, domain)) == NULL)
        return SL_OK;
    memset(u.used, 0, sizeof(u.used));
    u.e = e;
    u.n = n;
    u.budget = SL__RULES_UNORDERED_BUDGET;
    if ((hit = search(&u, &dom->root, 0)) == NULL)
        return SL_OK;
    d = (struct sl_descriptor){u.order, n, -1, NULL};
    if (build_key(out, domain, &d, u.path) != SL_OK) {
        out->key_len = 0;
        return SL_ETOOBIG;
    }
    fill(out, hit);
    return SL_OK;
}

bool sl__rules_domain_detailed(const sl_rules *r, struct sl_str domain)
{
    const struct sl__rdomain *dom = r != NULL ? sl__rules_find_domain(r, domain) : NULL;

    return dom != NULL && dom->detailed;
}

bool sl__rules_domain_denies_unmatched(const sl_rules *r, struct sl_str domain)
{
    const struct sl__rdomain *dom = r != NULL ? sl__rules_find_domain(r, domain) : NULL;

    return dom != NULL && dom->unmatched == SL__UNMATCHED_DENY;
}

bool sl__rules_limit_denies_all(const struct sl_limit *l)
{
    return sl__rlimit_of(l)->deny_all;
}

/* ------------------------------------------------------------ listing */

struct walk {
    void (*fn)(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
               bool unlimited);
    void *arg;
};

static void walk_node(const struct walk *w, const struct sl__rnode *n)
{
    if (n->unlimited)
        w->fn(w->arg, n->path, NULL, n->quota_mode, true);
    for (size_t i = 0; i < n->n_limits; i++)
        w->fn(w->arg, n->path, &n->limits[i].l, n->quota_mode, false);
    for (size_t i = 0; i < n->n_kids; i++)
        walk_node(w, n->kids[i]);
}

void sl_rules_foreach_limit(const sl_rules *r,
                            void (*fn)(void *arg, const char *path, const struct sl_limit *l,
                                       bool quota_mode, bool unlimited),
                            void *arg)
{
    struct walk w = {fn, arg};

    for (size_t i = 0; r != NULL && i < r->n_domains; i++)
        for (size_t k = 0; k < r->domains[i]->root.n_kids; k++)
            walk_node(&w, r->domains[i]->root.kids[k]);
}

/* Does the tree of `n` hold an adaptive limit (bit 1) and an `other` one (bit 2)? */
static unsigned mix_of(const struct sl__rnode *n, bool (*other)(const struct sl_limit *l))
{
    unsigned bits = 0;

    for (size_t i = 0; i < n->n_limits; i++) {
        const struct sl_limit *l = &n->limits[i].l;
        if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY)
            bits |= 1;
        else if (other(l))
            bits |= 2;
    }
    for (size_t i = 0; i < n->n_kids && bits != 3; i++)
        bits |= mix_of(n->kids[i], other);
    return bits;
}

const char *sl__rules_adaptive_mix(const sl_rules *r, bool (*other)(const struct sl_limit *l),
                                   const char **origin)
{
    for (size_t i = 0; r != NULL && i < r->n_domains; i++) {
        if (mix_of(&r->domains[i]->root, other) == 3) {
            *origin = r->domains[i]->origin;
            return r->domains[i]->name;
        }
    }
    *origin = NULL;
    return NULL;
}

static const struct sl__rlimit *first_nonrate(const struct sl__rnode *n)
{
    for (size_t i = 0; i < n->n_limits; i++)
        if (!n->limits[i].deny_all && !sl__limit_is_rate(&n->limits[i].l))
            return &n->limits[i];
    for (size_t i = 0; i < n->n_kids; i++) {
        const struct sl__rlimit *l = first_nonrate(n->kids[i]);
        if (l != NULL)
            return l;
    }
    return NULL;
}

const char *sl__rules_rlqs_nonrate(const sl_rules *r, const char **origin, const char **limit,
                                   enum sl_algo *algo)
{
    for (size_t i = 0; r != NULL && i < r->n_domains; i++) {
        const struct sl__rlimit *l;
        if (!r->domains[i]->rlqs || (l = first_nonrate(&r->domains[i]->root)) == NULL)
            continue;
        *origin = r->domains[i]->origin;
        *limit = l->name != NULL ? l->name : "?";
        *algo = l->l.algo;
        return r->domains[i]->name;
    }
    return NULL;
}

static size_t count_nodes(const struct sl__rnode *n)
{
    size_t c = 1;

    for (size_t i = 0; i < n->n_kids; i++)
        c += count_nodes(n->kids[i]);
    return c;
}

void sl__rules_census(const sl_rules *r, struct sl__rules_census *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; r != NULL && i < r->n_domains; i++) {
        const struct sl__rdomain *dom = r->domains[i];
        out->domains++;
        out->descriptors += count_nodes(&dom->root) - 1; /* not the root */
        /* on_unmatched: deny with no descriptor denies the whole domain:
         * deliberate, and no limit is lifted */
        if (dom->root.n_kids == 0 && dom->unmatched != SL__UNMATCHED_DENY &&
            out->empty_domain == NULL) {
            out->empty_domain = dom->name;
            out->empty_origin = dom->origin;
        }
    }
}
