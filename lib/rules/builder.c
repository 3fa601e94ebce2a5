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
    size_t cap_doms;
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
    b->cap_doms = 0;
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

static size_t descendants(const struct sl__rnode *n)
{
    size_t c = n->n_kids;

    for (size_t i = 0; i < n->n_kids; i++)
        c += descendants(n->kids[i]);
    return c;
}

size_t sl__rules_builder_descriptors(const sl_rules_builder *b)
{
    size_t c = 0;

    for (size_t i = 0; i < b->n_doms; i++)
        c += descendants(&b->doms[i]->root);
    return c;
}

void sl__rules_builder_diag(sl_rules_builder *b, const char *origin, int line, int col,
                            const char *msg)
{
    sl__diag(&b->d, origin, line, col, "%s", msg);
}

/* A file domain and where it comes in the order of definition. */
struct named {
    const struct sl__rdomain *dom;
    size_t at;
};

static int by_name_then_at(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->dom->name, y->dom->name);

    SL__RULES_OPS(1);
    return c != 0 ? c : (x->at > y->at) - (x->at < y->at);
}

/* A file domain defined twice is an error at the second definition: the
 * new domains v[0..n) are checked against the builder's and each other by
 * sorting names (a file of thousands of documents stays O(n log n)). */
static void check_domains(sl_rules_builder *b, struct sl__rdomain **v, size_t n, const char *origin)
{
    size_t total = b->n_doms + n, k = 0;
    struct named *all;
    const struct sl__rdomain **first_of;

    for (k = 0; k < n && v[k]->src != SL_SRC_FILE; k++)
        ;
    if (k == n)
        return; /* no file domain among the new ones: nothing to check */
    all = malloc(total * sizeof(*all));
    first_of = calloc(n, sizeof(*first_of));
    if (all == NULL || first_of == NULL) {
        b->d.oom = true;
        goto out;
    }
    k = 0;
    for (size_t i = 0; i < total; i++) {
        const struct sl__rdomain *d = i < b->n_doms ? b->doms[i] : v[i - b->n_doms];
        if (d->src == SL_SRC_FILE)
            all[k++] = (struct named){d, i};
    }
    qsort(all, k, sizeof(*all), by_name_then_at);
    for (size_t i = 1; i < k; i++) {
        size_t g = i - 1; /* the first of this name */
        for (; i < k && strcmp(all[g].dom->name, all[i].dom->name) == 0; i++)
            if (all[i].at >= b->n_doms)
                first_of[all[i].at - b->n_doms] = all[g].dom;
    }
    for (size_t i = 0; i < n; i++) { /* in the text's order */
        int line = 0, col = 0;
        if (first_of[i] == NULL)
            continue;
        sscanf(v[i]->origin + strlen(origin), ":%d:%d", &line, &col);
        sl__diag(&b->d, origin, line, col,
                 "domain '%.200s' is already defined at %s; put its descriptors in one document",
                 v[i]->name, first_of[i]->origin);
    }
out:
    free(all);
    free(first_of);
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
        check_domains(b, tmp, n_tmp, origin);
    if (rc == SL_OK && b->d.n == before && n_tmp == 0) {
        free(tmp);
        return SL_OK;
    }
    if (rc == SL_OK && b->d.n == before) {
        void *v = b->doms;
        if (sl__grow(&v, &b->cap_doms, b->n_doms + n_tmp, sizeof(*b->doms)) == SL_OK) {
            b->doms = v;
            for (size_t i = 0; i < n_tmp; i++)
                tmp[i]->seq = b->seq++;
            memcpy(b->doms + b->n_doms, tmp, n_tmp * sizeof(*b->doms));
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

/* A child in a merge: the node, the slot that holds it in its parent (to
 * take it from there when it moves) and its rank in the order in which the
 * texts apply (the destination's children first, then each source's). */
struct ranked {
    struct sl__rnode *n;
    struct sl__rnode **slot;
    size_t rank;
};

static int by_identity_then_rank(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    int c = sl__rnode_cmp_identity(x->n, y->n);

    return c != 0 ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_rank(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;

    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int merge_into(struct sl__rnode *dst, struct sl__rnode **src, size_t n_src);

/* One identity's children v[0..n), in rank order: the first is the one
 * that stays (dst's own, or the first source's, moved to dst by the
 * caller); each later one, in turn, imposes its policy when it states one
 * and merges its children. */
static int merge_group(struct ranked *v, size_t n)
{
    struct sl__rnode **later;
    int rc;

    if (n == 1)
        return SL_OK;
    later = malloc((n - 1) * sizeof(*later));
    if (later == NULL)
        return SL_ENOMEM;
    for (size_t i = 1; i < n; i++) {
        later[i - 1] = v[i].n;
        if (v[i].n->has_policy)
            take_policy(v[0].n, v[i].n);
    }
    rc = merge_into(v[0].n, later, n - 1);
    free(later);
    return rc;
}

/*
 * Merge the children of src[0..n_src) (in that order) into dst's, overriding
 * where they meet, one level at a time: a child with an identity dst lacks
 * moves to dst (its slot in its source set to NULL), appended in the order
 * of the texts. Each level sorts its children once (O(n log n) overall;
 * searching dst's children for each source child was O(n^2)). Sources keep
 * what did not move, to be freed with them.
 */
static int merge_into(struct sl__rnode *dst, struct sl__rnode **src, size_t n_src)
{
    size_t total = dst->n_kids, k = 0, n_new = 0;
    struct ranked *v, *moved;
    int rc = SL_OK;

    for (size_t s = 0; s < n_src; s++)
        total += src[s]->n_kids;
    if (total == dst->n_kids)
        return SL_OK;
    v = malloc(total * sizeof(*v));
    moved = malloc(total * sizeof(*moved));
    if (v == NULL || moved == NULL) {
        rc = SL_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < dst->n_kids; i++, k++)
        v[k] = (struct ranked){dst->kids[i], NULL, k};
    for (size_t s = 0; s < n_src; s++)
        for (size_t i = 0; i < src[s]->n_kids; i++, k++)
            v[k] = (struct ranked){src[s]->kids[i], &src[s]->kids[i], k};
    qsort(v, total, sizeof(*v), by_identity_then_rank);
    for (size_t i = 0, j; rc == SL_OK && i < total; i = j) {
        for (j = i + 1; j < total && sl__rnode_cmp_identity(v[i].n, v[j].n) == 0; j++)
            ;
        if (v[i].slot != NULL) /* new to dst */
            moved[n_new++] = v[i];
        rc = merge_group(v + i, j - i);
    }
    qsort(moved, n_new, sizeof(*moved), by_rank);
    for (size_t i = 0; rc == SL_OK && i < n_new; i++) {
        rc = sl__rnode_add_kid(dst, moved[i].n);
        if (rc == SL_OK)
            *moved[i].slot = NULL;
    }
out:
    free(v);
    free(moved);
    return rc;
}

static int by_name_then_src(const void *a, const void *b)
{
    const struct sl__rdomain *x = *(struct sl__rdomain *const *)a;
    const struct sl__rdomain *y = *(struct sl__rdomain *const *)b;
    int c = strcmp(x->name, y->name);

    SL__RULES_OPS(1);
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

/* Sort the domains (by name, files first, then database texts in the
 * order added) and merge each name's definitions into its first. */
static int merge_all(sl_rules_builder *b, sl_rules *r)
{
    int rc = SL_OK;

    if (b->n_doms > 1)
        qsort(b->doms, b->n_doms, sizeof(*b->doms), by_name_then_src);
    for (size_t i = 0, j; rc == SL_OK && i < b->n_doms; i = j) {
        struct sl__rdomain *dom = b->doms[i];
        for (j = i + 1; j < b->n_doms && strcmp(b->doms[j]->name, dom->name) == 0; j++)
            ;
        if (j - i > 1) {
            struct sl__rnode **roots = malloc((j - i - 1) * sizeof(*roots));
            if (roots == NULL)
                return SL_ENOMEM;
            for (size_t k = i + 1; k < j; k++)
                roots[k - i - 1] = &b->doms[k]->root;
            for (size_t k = i + 1; k < j; k++) /* a later text that says it wins */
                if (b->doms[k]->unmatched != SL__UNMATCHED_UNSET)
                    dom->unmatched = b->doms[k]->unmatched;
            for (size_t k = i + 1; k < j; k++)
                dom->rlqs = dom->rlqs || b->doms[k]->rlqs;
            rc = merge_into(&dom->root, roots, j - i - 1);
            free(roots);
        }
        r->domains[r->n_domains++] = dom;
        b->doms[i] = NULL; /* moved; the merged ones are freed with the builder's */
    }
    return rc;
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
