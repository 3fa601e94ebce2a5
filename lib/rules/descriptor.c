/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * descriptor.c - compile the YAML documents of one rules text into domains:
 * `domain`, `on_unmatched`, nested `descriptors` with `key`, `value` (exact,
 * or with '*' wildcards), the Envoy flags, and each descriptor's limits
 * (policy.c).
 *
 * Every problem is diagnosed and compilation goes on, so that one run
 * reports all of them; a text with any diagnostic yields no domain at all
 * (nothing half-loaded). Merging domains from several texts is builder.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ycheck.h"

enum {
    D_KEY,
    D_VALUE,
    D_RATE_LIMIT,
    D_LIMITS,
    D_DESCRIPTORS,
    D_SHADOW,
    D_QUOTA,
    D_DETAILED,
    D_VALUE_TO_METRIC,
    D_SHARE,
    D_METADATA,
    D_N
};
static const char *const d_names[D_N] = {
    "key",         "value",      "rate_limit",      "limits",          "descriptors",
    "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold",
    "metadata"};

static bool parse_list(struct sl__cctx *c, const struct sl__ynode *seq, struct sl__rnode *parent,
                       int depth);

void sl__rnode_free_kids(struct sl__rnode *n)
{
    for (size_t i = 0; i < n->n_kids; i++) {
        struct sl__rnode *k = n->kids[i];
        if (k == NULL) /* moved away by a merge */
            continue;
        sl__rnode_free_kids(k);
        free(k);
    }
    for (size_t i = 0; i < n->n_limits; i++) {
        struct sl__rlimit *rl = &n->limits[i];
        free(rl->name);
        for (size_t j = 0; j < rl->n_replaces; j++)
            free(rl->replaces[j]);
        free(rl->replaces);
    }
    free(n->limits);
    free(n->kids);
    free(n->exact);
    free(n->wild);
    free(n->keyonly);
    free(n->key);
    free(n->value);
    free(n->metadata_json);
    free(n->path);
}

void sl__rdomain_free(struct sl__rdomain *dom)
{
    if (dom == NULL)
        return;
    sl__rnode_free_kids(&dom->root);
    free(dom->name);
    free(dom->origin);
    free(dom);
}

static bool set_path(struct sl__cctx *c, const struct sl__rnode *parent, struct sl__rnode *n)
{
    size_t need = strlen(parent->path) + strlen(n->key) + (n->value ? strlen(n->value) : 0) + 3;

    n->path = malloc(need);
    if (n->path == NULL) {
        c->d->oom = true;
        return false;
    }
    snprintf(n->path, need, "%s.%s%s%s", parent->path, n->key, n->value ? "_" : "",
             n->value ? n->value : "");
    return true;
}

static bool parse_identity(struct sl__cctx *c, const struct sl__ynode *map,
                           const struct sl__ynode **v, struct sl__rnode *n)
{
    if (v[D_KEY] == NULL) {
        SL__ERR(c, map, "a descriptor needs a key");
        return false;
    }
    if (!sl__y_str(c, v[D_KEY], "key", &n->key))
        return false;
    if (n->key[0] == '\0') {
        SL__ERR(c, v[D_KEY], "a descriptor key must not be empty");
        return false;
    }
    if (v[D_VALUE] != NULL) {
        if (!sl__y_str(c, v[D_VALUE], "value", &n->value))
            return false;
        if (n->value[0] == '\0') { /* Envoy: an empty value is no value */
            free(n->value);
            n->value = NULL;
        }
    }
    n->wildcard = n->value != NULL && strchr(n->value, '*') != NULL;
    return true;
}

static bool parse_flags(struct sl__cctx *c, const struct sl__ynode **v, struct sl__rnode *n)
{
    bool ok = true;

    if (v[D_SHADOW] != NULL)
        ok = sl__y_bool(c, v[D_SHADOW], "shadow_mode", &n->shadow) && ok;
    if (v[D_QUOTA] != NULL)
        ok = sl__y_bool(c, v[D_QUOTA], "quota_mode", &n->quota_mode) && ok;
    if (v[D_DETAILED] != NULL)
        ok = sl__y_bool(c, v[D_DETAILED], "detailed_metric", &n->detailed_metric) && ok;
    if (v[D_VALUE_TO_METRIC] != NULL)
        ok = sl__y_bool(c, v[D_VALUE_TO_METRIC], "value_to_metric", &n->value_to_metric) && ok;
    if (v[D_SHARE] != NULL)
        ok = sl__y_bool(c, v[D_SHARE], "share_threshold", &n->share_threshold) && ok;
    if (ok && n->share_threshold && !n->wildcard) {
        SL__ERR(c, v[D_SHARE], "share_threshold needs a wildcard value such as 'files/*'");
        ok = false;
    }
    if (v[D_METADATA] != NULL)
        ok = sl__y_json(c, v[D_METADATA], &n->metadata_json) && ok;
    return ok;
}

static bool add_kid(struct sl__cctx *c, struct sl__rnode *parent, struct sl__rnode *n)
{
    if (sl__rnode_add_kid(parent, n) == SL_OK)
        return true;
    c->d->oom = true;
    return false;
}

/* A child and its place among its siblings, for sorting by identity. */
struct placed {
    struct sl__rnode *n;
    size_t at;
};

static int by_identity_then_place(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;
    int c = sl__rnode_cmp_identity(x->n, y->n);

    return c != 0 ? c : (x->at > y->at) - (x->at < y->at);
}

/*
 * Diagnose every child of `parent` whose identity (key and value) an
 * earlier sibling already has, and drop it: sorted by identity, siblings
 * with the same one are neighbours, so this is O(n log n) where comparing
 * each with every earlier one was O(n^2) (18,000 siblings took seconds).
 * Diagnostics come in the text's order; the children kept keep theirs.
 */
static bool drop_duplicates(struct sl__cctx *c, struct sl__rnode *parent)
{
    size_t n = parent->n_kids, kept = 0;
    struct placed *v;
    const struct sl__rnode **first;
    bool ok = true;

    if (n < 2)
        return true;
    v = malloc(n * sizeof(*v));
    first = calloc(n, sizeof(*first)); /* per position: the sibling it repeats */
    if (v == NULL || first == NULL) {
        free(v);
        free(first);
        c->d->oom = true;
        return false;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct placed){parent->kids[i], i};
    qsort(v, n, sizeof(*v), by_identity_then_place);
    for (size_t i = 0, j; i < n; i = j)
        for (j = i + 1; j < n && sl__rnode_cmp_identity(v[i].n, v[j].n) == 0; j++)
            first[v[j].at] = v[i].n;
    for (size_t i = 0; i < n; i++) {
        struct sl__rnode *k = parent->kids[i];
        if (first[i] == NULL) {
            parent->kids[kept++] = k;
            continue;
        }
        sl__diag(c->d, c->origin, k->line, k->col,
                 "duplicate descriptor '%.200s' (first defined at line %d); merge them", k->path,
                 first[i]->line);
        sl__rnode_free_kids(k);
        free(k);
        ok = false;
    }
    parent->n_kids = kept;
    free(v);
    free(first);
    return ok;
}

static bool parse_one(struct sl__cctx *c, const struct sl__ynode *map, struct sl__rnode *parent,
                      int depth)
{
    const struct sl__ynode *v[D_N];
    struct sl__rnode *n;
    bool ok = sl__y_fields(c, map, "a descriptor", d_names, D_N, v);

    if (map->type != SL__Y_MAP)
        return false;
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        c->d->oom = true;
        return false;
    }
    n->line = map->line;
    n->col = map->col;
    if (!parse_identity(c, map, v, n) || !set_path(c, parent, n)) {
        sl__rnode_free_kids(n);
        free(n);
        return false;
    }
    ok = parse_flags(c, v, n) && ok;
    ok = sl__parse_policy(c, v[D_RATE_LIMIT], v[D_LIMITS], n) && ok;
    if (v[D_DESCRIPTORS] != NULL)
        ok = parse_list(c, v[D_DESCRIPTORS], n, depth + 1) && ok;
    if (!add_kid(c, parent, n)) {
        sl__rnode_free_kids(n);
        free(n);
        return false;
    }
    return ok;
}

static bool parse_list(struct sl__cctx *c, const struct sl__ynode *seq, struct sl__rnode *parent,
                       int depth)
{
    bool ok = true;

    if (seq->type == SL__Y_SCALAR && seq->plain && seq->len == 0)
        return true; /* `descriptors:` with nothing after it, as Envoy allows */
    if (seq->type != SL__Y_SEQ) {
        SL__ERR(c, seq, "descriptors must be a list of descriptors (- key: ...)");
        return false;
    }
    if (depth >= SL_MAX_ENTRIES) {
        SL__ERR(c, seq, "descriptors nest deeper than %d levels, which no request can match",
                SL_MAX_ENTRIES);
        return false;
    }
    for (size_t i = 0; i < seq->n_kids; i++)
        ok = parse_one(c, seq->kids[i], parent, depth) && ok;
    return drop_duplicates(c, parent) && ok;
}

static struct sl__rdomain *new_domain(struct sl__cctx *c, const struct sl__ynode *doc,
                                      const struct sl__ynode *name)
{
    struct sl__rdomain *dom = calloc(1, sizeof(*dom));
    char where[64];

    if (dom == NULL)
        return NULL;
    snprintf(where, sizeof(where), ":%d:%d", doc->line, doc->col);
    dom->src = c->src;
    dom->name = sl__strdup(name->text);
    dom->root.path = sl__strdup(name->text);
    dom->origin = malloc(strlen(c->origin) + sizeof(where));
    if (dom->name == NULL || dom->root.path == NULL || dom->origin == NULL) {
        sl__rdomain_free(dom);
        return NULL;
    }
    memcpy(dom->origin, c->origin, strlen(c->origin));
    memcpy(dom->origin + strlen(c->origin), where, strlen(where) + 1);
    return dom;
}

/* on_unmatched: allow | deny. */
static bool parse_unmatched(struct sl__cctx *c, const struct sl__ynode *n, struct sl__rdomain *dom)
{
    if (n->type == SL__Y_SCALAR && strcmp(n->text, "allow") == 0)
        dom->unmatched = SL__UNMATCHED_ALLOW;
    else if (n->type == SL__Y_SCALAR && strcmp(n->text, "deny") == 0)
        dom->unmatched = SL__UNMATCHED_DENY;
    else {
        SL__ERR(c, n,
                "on_unmatched must be allow (a descriptor no rule matches is not limited, as "
                "Envoy does) or deny (it is denied)");
        return false;
    }
    return true;
}

bool sl__limit_is_rate(const struct sl_limit *l)
{
    return l->algo != SL_ALGO_CONCURRENCY && l->algo != SL_ALGO_ADAPTIVE_CONCURRENCY &&
           !(l->algo == SL_ALGO_SLIDING_LOG && l->min_interval_ns > 0) && l->period_ns > 0;
}

/* rlqs: true - every limit of the domain must be one a quota assignment
 * carries: each that is not is refused where it stands. */
static bool check_rlqs(struct sl__cctx *c, const struct sl__rnode *n, const char *domain)
{
    bool ok = true;

    for (size_t i = 0; i < n->n_limits; i++) {
        const struct sl__rlimit *rl = &n->limits[i];
        if (rl->deny_all || sl__limit_is_rate(&rl->l))
            continue;
        sl__diag(c->d, c->origin, n->line, n->col,
                 "limit '%s' of domain '%s' is %s%s, which a rate limit quota assignment cannot "
                 "carry; the domain says rlqs: true, so only rates (requests per period) may be "
                 "limits in it",
                 rl->name != NULL ? rl->name : "?", domain, sl_algo_name(rl->l.algo),
                 rl->l.algo == SL_ALGO_SLIDING_LOG ? " with min_interval" : "");
        ok = false;
    }
    for (size_t i = 0; i < n->n_kids; i++)
        ok = check_rlqs(c, n->kids[i], domain) && ok;
    return ok;
}

static bool parse_doc(struct sl__cctx *c, const struct sl__ynode *doc, struct sl__rdomain **out)
{
    static const char *const names[] = {"domain", "descriptors", "on_unmatched", "rlqs"};
    const struct sl__ynode *v[4];
    struct sl__rdomain *dom;
    bool ok = sl__y_fields(c, doc, "a rules document", names, 4, v);

    *out = NULL;
    if (doc->type != SL__Y_MAP)
        return false;
    if (v[0] == NULL || v[0]->type != SL__Y_SCALAR || v[0]->len == 0) {
        SL__ERR(c, v[0] ? v[0] : doc, "a rules document needs a non-empty domain: name");
        return false;
    }
    dom = new_domain(c, doc, v[0]);
    if (dom == NULL) {
        c->d->oom = true;
        return false;
    }
    c->domain = dom->name;
    if (v[1] != NULL)
        ok = parse_list(c, v[1], &dom->root, 0) && ok;
    if (v[2] != NULL)
        ok = parse_unmatched(c, v[2], dom) && ok;
    if (v[3] != NULL) {
        if (!sl__y_bool(c, v[3], "rlqs", &dom->rlqs))
            ok = false;
        else if (dom->rlqs)
            ok = check_rlqs(c, &dom->root, dom->name) && ok;
    }
    *out = dom;
    return ok;
}

static bool push_domain(struct sl__rdomain ***out, size_t *n_out, struct sl__rdomain *dom)
{
    struct sl__rdomain **v = realloc(*out, (*n_out + 1) * sizeof(*v));

    if (v == NULL)
        return false;
    *out = v;
    v[(*n_out)++] = dom;
    return true;
}

static bool empty_doc(const struct sl__ynode *doc)
{
    return doc->type == SL__Y_SCALAR && doc->plain && doc->len == 0;
}

int sl__rules_compile_docs(struct sl__ynode **docs, size_t n_docs, const char *origin,
                           enum sl_rules_source src, struct sl__diags *d, struct sl__rdomain ***out,
                           size_t *n_out)
{
    struct sl__cctx c = {.origin = origin, .d = d, .src = src};
    size_t before = d->n, first = *n_out;

    for (size_t i = 0; i < n_docs; i++) {
        struct sl__rdomain *dom = NULL;
        if (empty_doc(docs[i]))
            continue;
        parse_doc(&c, docs[i], &dom);
        if (dom != NULL && !push_domain(out, n_out, dom)) {
            sl__rdomain_free(dom);
            d->oom = true;
        }
    }
    if (d->n == before && !d->oom)
        return SL_OK;
    for (size_t i = first; i < *n_out; i++) /* nothing half-loaded */
        sl__rdomain_free((*out)[i]);
    *n_out = first;
    return d->oom ? SL_ENOMEM : SL_EPARSE;
}
