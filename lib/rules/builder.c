/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * builder.c - collect rules texts (files, then database rows), report every
 * diagnostic, and compile them into one immutable sl_rules snapshot.
 *
 * Precedence: a domain may be defined once among files (a second definition
 * is an error). Database texts merge into it: a database descriptor at the
 * same (domain, descriptor path) as a file's replaces that descriptor's
 * limits and flags when it states a policy (rate_limit or limits), and its
 * children merge the same way, one level at a time; database texts are
 * applied in the order they were added, so a later row wins. A domain's
 * on_unmatched is the last one stated.
 *
 * It does not match requests (match.c) nor publish snapshots (slot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_int.h"

struct sl_rules_builder {
    struct sl__diags d;
    struct sl__rdomain **doms;
    size_t n_doms;
    size_t seq; /* add order, which breaks ties between database texts */
};

sl_rules_builder *sl_rules_builder_new(void)
{
    return calloc(1, sizeof(struct sl_rules_builder));
}

static void drop_domains(sl_rules_builder *b)
{
    for (size_t i = 0; i < b->n_doms; i++)
        sl__rdomain_free(b->doms[i]);
    free(b->doms);
    b->doms = NULL;
    b->n_doms = 0;
}

void sl_rules_builder_free(sl_rules_builder *b)
{
    if (b == NULL)
        return;
    drop_domains(b);
    sl__diags_free(&b->d);
    free(b);
}

size_t sl_rules_builder_ndiags(const sl_rules_builder *b)
{
    return b->d.n;
}

const char *sl_rules_builder_diag(const sl_rules_builder *b, size_t i)
{
    return i < b->d.n ? b->d.v[i] : NULL;
}

size_t sl__rules_builder_domains(const sl_rules_builder *b, const char **names, size_t max)
{
    for (size_t i = 0; i < b->n_doms && i < max; i++)
        names[i] = b->doms[i]->name;
    return b->n_doms;
}

void sl__rules_builder_diag(sl_rules_builder *b, const char *origin, int line, int col,
                            const char *msg)
{
    sl__diag(&b->d, origin, line, col, "%s", msg);
}

static const struct sl__rdomain *file_domain(struct sl__rdomain *const *v, size_t n,
                                             const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i]->src == SL_SRC_FILE && strcmp(v[i]->name, name) == 0)
            return v[i];
    }
    return NULL;
}

/* A file domain defined twice is an error at the second definition. */
static void check_domains(sl_rules_builder *b, struct sl__rdomain **v, size_t first, size_t n,
                          const char *origin)
{
    for (size_t i = first; i < n; i++) {
        const struct sl__rdomain *prev;
        int line = 0, col = 0;
        if (v[i]->src != SL_SRC_FILE)
            continue;
        prev = file_domain(b->doms, b->n_doms, v[i]->name);
        if (prev == NULL)
            prev = file_domain(v + first, i - first, v[i]->name);
        if (prev == NULL)
            continue;
        sscanf(v[i]->origin + strlen(origin), ":%d:%d", &line, &col);
        sl__diag(&b->d, origin, line, col,
                 "domain '%.200s' is already defined at %s; put its descriptors in one document",
                 v[i]->name, prev->origin);
    }
}

int sl_rules_builder_add_yaml(sl_rules_builder *b, const char *text, size_t len, const char *origin,
                              enum sl_rules_source src)
{
    struct sl__ynode **docs = NULL;
    struct sl__rdomain **tmp = NULL;
    size_t n_docs = 0, n_tmp = 0, before = b->d.n;
    char err[256];
    int line = 0, col = 0, rc;

    rc = sl__yaml_load(text, len, &docs, &n_docs, err, sizeof(err), &line, &col);
    if (rc != SL_OK) {
        if (rc == SL_EPARSE)
            sl__diag(&b->d, origin, line, col, "invalid YAML: %s", err);
        return rc;
    }
    rc = sl__rules_compile_docs(docs, n_docs, origin, src, &b->d, &tmp, &n_tmp);
    sl__ydocs_free(docs, n_docs);
    if (rc == SL_OK)
        check_domains(b, tmp, 0, n_tmp, origin);
    if (rc == SL_OK && b->d.n == before && n_tmp == 0) {
        free(tmp);
        return SL_OK;
    }
    if (rc == SL_OK && b->d.n == before) {
        struct sl__rdomain **v = realloc(b->doms, (b->n_doms + n_tmp) * sizeof(*v));
        if (v != NULL) {
            for (size_t i = 0; i < n_tmp; i++)
                tmp[i]->seq = b->seq++;
            memcpy(v + b->n_doms, tmp, n_tmp * sizeof(*v));
            b->doms = v;
            b->n_doms += n_tmp;
            free(tmp);
            return SL_OK;
        }
        rc = SL_ENOMEM;
    }
    for (size_t i = 0; i < n_tmp; i++)
        sl__rdomain_free(tmp[i]);
    free(tmp);
    return rc == SL_OK ? SL_EPARSE : rc;
}

/* ------------------------------------------------------------ merging */

static bool same_identity(const struct sl__rnode *a, const struct sl__rnode *b)
{
    if (strcmp(a->key, b->key) != 0)
        return false;
    if (a->value == NULL || b->value == NULL)
        return a->value == b->value;
    return strcmp(a->value, b->value) == 0;
}

#define SWAP(a, b)                                                                                 \
    do {                                                                                           \
        __typeof__(a) t_ = (a);                                                                    \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

/* dst takes src's policy; src keeps dst's old one, to be freed with it. */
static void take_policy(struct sl__rnode *dst, struct sl__rnode *src)
{
    SWAP(dst->limits, src->limits);
    SWAP(dst->n_limits, src->n_limits);
    SWAP(dst->metadata_json, src->metadata_json);
    dst->unlimited = src->unlimited;
    dst->shadow = src->shadow;
    dst->quota_mode = src->quota_mode;
    dst->detailed_metric = src->detailed_metric;
    dst->value_to_metric = src->value_to_metric;
    dst->share_threshold = src->share_threshold;
    dst->has_policy = true;
}

/* Move src's children into dst, overriding where they meet. Moved children
 * are set to NULL in src. */
static int merge_kids(struct sl__rnode *dst, struct sl__rnode *src)
{
    for (size_t i = 0; i < src->n_kids; i++) {
        struct sl__rnode *s = src->kids[i], *d = NULL;
        for (size_t j = 0; j < dst->n_kids && d == NULL; j++)
            d = same_identity(dst->kids[j], s) ? dst->kids[j] : NULL;
        if (d == NULL) {
            struct sl__rnode **k = realloc(dst->kids, (dst->n_kids + 1) * sizeof(*k));
            if (k == NULL)
                return SL_ENOMEM;
            dst->kids = k;
            k[dst->n_kids++] = s;
            src->kids[i] = NULL;
            continue;
        }
        if (s->has_policy)
            take_policy(d, s);
        if (merge_kids(d, s) != SL_OK)
            return SL_ENOMEM;
    }
    return SL_OK;
}

static int by_name_then_src(const void *a, const void *b)
{
    const struct sl__rdomain *x = *(struct sl__rdomain *const *)a;
    const struct sl__rdomain *y = *(struct sl__rdomain *const *)b;
    int c = strcmp(x->name, y->name);

    if (c != 0)
        return c;
    if (x->src != y->src)
        return x->src == SL_SRC_FILE ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ------------------------------------------------------------ snapshot */

static void rules_free(sl_rules *r)
{
    for (size_t i = 0; i < r->n_domains; i++)
        sl__rdomain_free(r->domains[i]);
    free(r->domains);
    free(r);
}

sl_rules *sl_rules_ref(sl_rules *r)
{
    if (r != NULL)
        atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

void sl_rules_unref(sl_rules *r)
{
    if (r != NULL && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        rules_free(r);
}

static int merge_all(sl_rules_builder *b, sl_rules *r)
{
    size_t out = 0;

    if (b->n_doms > 1)
        qsort(b->doms, b->n_doms, sizeof(*b->doms), by_name_then_src);
    for (size_t i = 0; i < b->n_doms; i++) {
        struct sl__rdomain *dom = b->doms[i];
        b->doms[i] = NULL;
        if (out > 0 && strcmp(r->domains[out - 1]->name, dom->name) == 0) {
            int rc = merge_kids(&r->domains[out - 1]->root, &dom->root);
            if (dom->unmatched != SL__UNMATCHED_UNSET) /* a later text that says it wins */
                r->domains[out - 1]->unmatched = dom->unmatched;
            sl__rdomain_free(dom);
            if (rc != SL_OK)
                return rc;
            continue;
        }
        r->domains[out++] = dom;
        r->n_domains = out;
    }
    return SL_OK;
}

static bool any_detailed(const struct sl__rnode *n)
{
    if (n->detailed_metric)
        return true;
    for (size_t i = 0; i < n->n_kids; i++)
        if (any_detailed(n->kids[i]))
            return true;
    return false;
}

int sl_rules_build(sl_rules_builder *b, sl_rules **out)
{
    sl_rules *r;
    int rc;

    *out = NULL;
    if (b->d.n > 0 || b->d.oom)
        return b->d.oom ? SL_ENOMEM : SL_EPARSE;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return SL_ENOMEM;
    atomic_init(&r->refs, 1);
    r->domains = calloc(b->n_doms ? b->n_doms : 1, sizeof(*r->domains));
    rc = r->domains == NULL ? SL_ENOMEM : merge_all(b, r);
    for (size_t i = 0; rc == SL_OK && i < r->n_domains; i++) {
        rc = sl__rnode_index(&r->domains[i]->root);
        r->domains[i]->detailed = any_detailed(&r->domains[i]->root);
    }
    drop_domains(b);
    if (rc != SL_OK) {
        rules_free(r);
        return rc;
    }
    *out = r;
    return SL_OK;
}
