/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_adaptive_config.c - a route's `adaptive_concurrency:` mapping
 * (docs/proxy.md §Adaptive concurrency): the controller (`algorithm` and
 * its parameters as flat keys, each taking libsluice's default for that
 * algorithm when unset, sl_adaptive_config_init), the priority classes
 * and their guaranteed shares, where a request's class comes from, and
 * the status and Retry-After of a shed request. Errors at file:line:col;
 * the controller's and the classes' own checks are libsluice's
 * (sl_adaptive_config_validate, sl_partition_config_validate), whose
 * reasons are given as they are.
 *
 * It parses and checks; the controllers run in proxy_adaptive.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "proxy_int.h"
#include "xalloc.h"

/* ------------------------------------------------------------ the keys */

/* A number: "0.9", "1.5". */
static int parse_double(const char *text, double *out)
{
    char *end;
    double d;

    if (*text == '\0' || isspace((unsigned char)*text))
        return -1;
    d = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

static int parse_ratio(const char *text, void *field, const char **why)
{
    double d;

    if (parse_double(text, &d) != 0) {
        *why = "must be a number, e.g. 0.9";
        return -1;
    }
    memcpy(field, &d, sizeof(d));
    return 0;
}

/* "50", "50%", "12.5 %". */
static int parse_pct(const char *text, void *field, const char **why)
{
    char buf[32];
    size_t n = strlen(text);
    double d;

    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    if (n > 0 && text[n - 1] == '%')
        n--;
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    if (n == 0 || n >= sizeof(buf)) {
        *why = "must be a percentage, e.g. 50 or 50%";
        return -1;
    }
    memcpy(buf, text, n);
    buf[n] = '\0';
    if (parse_double(buf, &d) != 0) {
        *why = "must be a percentage, e.g. 50 or 50%";
        return -1;
    }
    memcpy(field, &d, sizeof(d));
    return 0;
}

/* A duration in ns ("250ms", "5s"). */
static int parse_ns(const char *text, void *field, const char **why)
{
    int64_t ns;

    if (sl_duration_parse(text, strlen(text), &ns) != SL_OK || ns < 0) {
        *why = "must be a duration with its unit, e.g. 100ms";
        return -1;
    }
    memcpy(field, &ns, sizeof(ns));
    return 0;
}

/* The parameters' bits: which algorithms read them. */
#define GR  (1u << SL_ADAPTIVE_GRADIENT)
#define GR2 (1u << SL_ADAPTIVE_GRADIENT2)
#define VEG (1u << SL_ADAPTIVE_VEGAS)
#define AIM (1u << SL_ADAPTIVE_AIMD)

/* What a route's mapping is read into; the controller's parameters are
 * the library's struct itself. */
struct aread {
    struct sl_adaptive_config ac;
    unsigned status;
    int64_t retry_after_ms;
};

#define A(m) SL__KF(struct aread, ac.m)
static const struct sl__key akeys[] = {
    {"initial_limit", SL__K_UINT, A(initial_limit), NULL, "", .min = 1},
    {"min_limit", SL__K_UINT, A(min_limit), NULL, "", .min = 1},
    {"max_limit", SL__K_UINT, A(max_limit), NULL, "", .min = 1},
    {"backoff_ratio", SL__K_CUSTOM, A(backoff_ratio), NULL, "", .parse = parse_ratio},
    {"timeout", SL__K_CUSTOM, A(timeout_ns), NULL, "", .parse = parse_ns},
    {"smoothing", SL__K_CUSTOM, A(smoothing), NULL, "", .parse = parse_ratio},
    {"probe_multiplier", SL__K_UINT, A(probe_multiplier), NULL, "", .min = 1},
    {"rtt_tolerance", SL__K_CUSTOM, A(rtt_tolerance), NULL, "", .parse = parse_ratio},
    {"long_window", SL__K_UINT, A(long_window), NULL, "", .min = 1},
    {"queue_size", SL__K_UINT, A(queue_size), NULL, "", .max = 1000000},
    {"percentile", SL__K_CUSTOM, A(percentile), NULL, "", .parse = parse_pct},
    {"interval", SL__K_CUSTOM, A(update_interval_ns), NULL, "", .parse = parse_ns},
    {"min_rtt_interval", SL__K_CUSTOM, A(min_rtt_interval_ns), NULL, "", .parse = parse_ns},
    {"min_rtt_requests", SL__K_UINT, A(min_rtt_requests), NULL, "", .min = 1},
    {"jitter", SL__K_CUSTOM, A(jitter_pct), NULL, "", .parse = parse_pct},
    {"buffer", SL__K_CUSTOM, A(buffer_pct), NULL, "", .parse = parse_pct},
    {"status", SL__K_UINT, SL__KF(struct aread, status), NULL, "", .min = 400, .max = 599},
    {"retry_after", SL__K_DUR_MS, SL__KF(struct aread, retry_after_ms), NULL, ""},
};
#define NAKEYS (sizeof(akeys) / sizeof(akeys[0]))
/* akeys[i]'s algorithms, in the same order. */
static const unsigned akey_algos[NAKEYS] = {
    GR | GR2 | VEG | AIM,
    GR | GR2 | VEG | AIM,
    GR | GR2 | VEG | AIM,
    AIM,
    AIM,
    VEG | GR2,
    VEG,
    GR2,
    GR2,
    GR2,
    GR,
    GR,
    GR,
    GR,
    GR,
    GR,
    GR | GR2 | VEG | AIM,
    GR | GR2 | VEG | AIM,
};

/* "gradient2, vegas" for a key's bits. */
static void algos_text(unsigned bits, char *out, size_t cap)
{
    size_t used = 0;

    out[0] = '\0';
    for (unsigned a = 0; a < 4; a++) {
        if (!(bits & (1u << a)))
            continue;
        int n = snprintf(out + used, cap - used, "%s%s", used ? ", " : "",
                         sl_adaptive_algo_name((enum sl_adaptive_algo)a));
        if (n > 0 && (size_t)n < cap - used)
            used += (size_t)n;
    }
}

/* ------------------------------------------------------------ classes */

static bool class_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

static int load_classes(struct sl__config_ctx *x, struct sl__proxy_adaptive *ad, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    const char *why;

    if (v->type != YAML_MAPPING_NODE || v->data.mapping.pairs.top == v->data.mapping.pairs.start)
        return sl__config_fail(x, v,
                               "adaptive_concurrency.classes must be a mapping of class names to "
                               "shares, most critical first, e.g. {critical: 50%%, default: 35%%, "
                               "sheddable: 15%%}");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        const char *name = sl__config_scalar(kn), *share = sl__config_scalar(vn);
        double pct;
        if (ad->pc.n == SL_PARTITION_MAX)
            return sl__config_fail(x, kn, "adaptive_concurrency.classes: at most %d classes",
                                   SL_PARTITION_MAX);
        if (name == NULL || !class_name_ok(name))
            return sl__config_fail(x, kn,
                                   "adaptive_concurrency.classes: a class name is a word of "
                                   "letters, digits, '_', '-' or '.' (at most 63)");
        for (uint32_t k = 0; k < ad->pc.n; k++)
            if (strcasecmp(ad->classes[k], name) == 0)
                return sl__config_fail(x, kn, "adaptive_concurrency.classes: '%s' is given twice",
                                       name);
        if (share == NULL || parse_pct(share, &pct, &why) != 0 || pct < 0 || pct > 100 ||
            pct != floor(pct))
            return sl__config_fail(x, vn,
                                   "adaptive_concurrency.classes: the share of '%s' is a whole "
                                   "percentage from 0 to 100, e.g. 50%% (got '%s')",
                                   name, share ? share : "a list or a mapping");
        ad->classes[ad->pc.n] = sl__xstrndup(name, strlen(name));
        ad->pc.share_pct[ad->pc.n++] = (uint32_t)pct;
    }
    if (sl_partition_config_validate(&ad->pc, &why) != SL_OK)
        return sl__config_fail(x, v, "adaptive_concurrency.classes: %s", why);
    return 0;
}

/* class_from: {header: X-Priority} | route */
static int load_class_from(struct sl__config_ctx *x, struct sl__proxy_adaptive *ad, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    const char *s = sl__config_scalar(v);
    static const char usage[] = "adaptive_concurrency.class_from is {header: NAME} (e.g. "
                                "{header: X-Priority}) or route (with class: NAME)";

    if (s != NULL) {
        if (strcmp(s, "route") != 0)
            return sl__config_fail(x, v, "%s (got '%s')", usage, s);
        ad->class_from = SL__PCF_ROUTE;
        return 0;
    }
    if (v->type != YAML_MAPPING_NODE ||
        v->data.mapping.pairs.top - v->data.mapping.pairs.start != 1)
        return sl__config_fail(x, v, "%s", usage);
    yaml_node_t *kn = yaml_document_get_node(doc, v->data.mapping.pairs.start->key);
    yaml_node_t *vn = yaml_document_get_node(doc, v->data.mapping.pairs.start->value);
    const char *k = sl__config_scalar(kn), *h = sl__config_scalar(vn);
    if (k == NULL || strcmp(k, "header") != 0)
        return sl__config_fail(x, kn, "%s", usage);
    if (h == NULL || *h == '\0' || strlen(h) > 63 ||
        strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != strlen(h))
        return sl__config_fail(x, vn, "adaptive_concurrency.class_from.header is a header name");
    free(ad->class_header);
    ad->class_header = sl__xstrndup(h, strlen(h));
    for (char *c = ad->class_header; *c != '\0'; c++)
        *c = (char)tolower((unsigned char)*c);
    ad->class_from = SL__PCF_HEADER;
    return 0;
}

/* ------------------------------------------------------------ the mapping */

static const char known_keys[] =
    "algorithm, initial_limit, min_limit, max_limit, backoff_ratio, timeout, smoothing, "
    "probe_multiplier, rtt_tolerance, long_window, queue_size, percentile, interval, "
    "min_rtt_interval, min_rtt_requests, jitter, buffer, classes, class_from, class, status, "
    "retry_after";

/* The algorithm first (the defaults depend on it), wherever it is written. */
static int read_algorithm(struct sl__config_ctx *x, yaml_node_t *m, enum sl_adaptive_algo *algo)
{
    yaml_document_t *doc = sl__config_doc(x);

    *algo = SL_ADAPTIVE_GRADIENT;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *k = sl__config_scalar(yaml_document_get_node(doc, p->key));
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *s = sl__config_scalar(v);
        if (k == NULL || strcmp(k, "algorithm") != 0)
            continue;
        if (s == NULL || sl_adaptive_algo_parse(s, algo) != SL_OK)
            return sl__config_fail(x, v,
                                   "adaptive_concurrency.algorithm must be gradient, gradient2, "
                                   "vegas or aimd (got '%s')",
                                   s ? s : "a list or a mapping");
    }
    return 0;
}

/* One pair of the mapping other than `algorithm`; `cls` keeps class's node. */
static int adaptive_pair(struct sl__config_ctx *x, struct sl__proxy_adaptive *ad, struct aread *rd,
                         yaml_node_t *kn, yaml_node_t *v, yaml_node_t **cls)
{
    const char *k = sl__config_scalar(kn), *s = sl__config_scalar(v);
    const struct sl__key *key;
    char msg[256], algos[64];

    if (k == NULL)
        return sl__config_fail(x, kn, "adaptive_concurrency: a key is a name");
    if (strcmp(k, "algorithm") == 0)
        return 0;
    if (strcmp(k, "classes") == 0)
        return load_classes(x, ad, v);
    if (strcmp(k, "class_from") == 0)
        return load_class_from(x, ad, v);
    if (strcmp(k, "class") == 0) {
        if (s == NULL || *s == '\0')
            return sl__config_fail(x, v, "adaptive_concurrency.class must be a class name");
        *cls = v;
        return 0;
    }
    if ((key = sl__keytab_find(akeys, NAKEYS, k)) == NULL)
        return sl__config_fail(x, kn, "adaptive_concurrency: unknown key '%s' (%s)", k, known_keys);
    if (!(akey_algos[key - akeys] & (1u << rd->ac.algo))) {
        algos_text(akey_algos[key - akeys], algos, sizeof(algos));
        return sl__config_fail(x, kn,
                               "adaptive_concurrency: '%s' is a parameter of %s, not of "
                               "algorithm %s",
                               k, algos, sl_adaptive_algo_name(rd->ac.algo));
    }
    if (s == NULL)
        return sl__config_fail(x, v, "adaptive_concurrency.%s must be a scalar", k);
    if (sl__keytab_set(key, rd, s, NULL, msg, sizeof(msg)) != 0)
        return sl__config_fail(x, v, "adaptive_concurrency.%s", msg);
    return 0;
}

/* class: NAME names one of the classes (case-insensitively). */
static int route_class(struct sl__config_ctx *x, struct sl__proxy_adaptive *ad, yaml_node_t *m,
                       yaml_node_t *cls)
{
    const char *name = cls != NULL ? sl__config_scalar(cls) : NULL;

    if (ad->class_from == SL__PCF_ROUTE && cls == NULL)
        return sl__config_fail(x, m, "adaptive_concurrency: class_from: route needs class: NAME");
    if (ad->class_from != SL__PCF_ROUTE && cls != NULL)
        return sl__config_fail(x, cls, "adaptive_concurrency.class goes with class_from: route");
    if (ad->class_from != SL__PCF_NONE && ad->classes[0] == NULL)
        return sl__config_fail(x, m, "adaptive_concurrency: class_from needs classes");
    if (ad->class_from == SL__PCF_NONE && ad->classes[0] != NULL)
        return sl__config_fail(x, m,
                               "adaptive_concurrency: classes need class_from: {header: NAME} "
                               "or route");
    if (ad->class_from != SL__PCF_ROUTE)
        return 0;
    for (uint32_t k = 0; k < ad->pc.n; k++)
        if (strcasecmp(ad->classes[k], name) == 0) {
            ad->route_class = k;
            return 0;
        }
    return sl__config_fail(x, cls, "adaptive_concurrency.class: no class '%s' in classes", name);
}

int sl__proxy_adaptive_load(struct sl__config_ctx *x, struct sl__proxy_route *r, yaml_node_t *m)
{
    yaml_document_t *doc = sl__config_doc(x);
    struct sl__proxy_adaptive *ad;
    struct aread rd = {.status = 503, .retry_after_ms = 1000};
    yaml_node_t *cls = NULL;
    const char *why;
    int failed = 0;

    if (r->ad != NULL)
        return sl__config_fail(x, m, "adaptive_concurrency is given twice");
    if (m->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, m,
                               "adaptive_concurrency must be a mapping, e.g. {algorithm: "
                               "gradient2, max_limit: 100}");
    ad = r->ad = sl__xzalloc(sizeof(*ad));
    if (read_algorithm(x, m, &rd.ac.algo) != 0)
        return -1;
    sl_adaptive_config_init(&rd.ac, rd.ac.algo);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++)
        if (adaptive_pair(x, ad, &rd, yaml_document_get_node(doc, p->key),
                          yaml_document_get_node(doc, p->value), &cls) != 0)
            failed = -1; /* and on: every error in one run */
    if (failed != 0)
        return -1;
    if (sl_adaptive_config_validate(&rd.ac, &why) != SL_OK)
        return sl__config_fail(x, m, "adaptive_concurrency: %s", why);
    if (route_class(x, ad, m, cls) != 0)
        return -1;
    if (ad->pc.n == 0) { /* one class, the whole limit */
        ad->pc.n = 1;
        ad->pc.share_pct[0] = 0;
        ad->classes[0] = sl__xstrndup("default", 7);
    }
    ad->ac = rd.ac;
    ad->status = rd.status;
    ad->retry_after_ms = rd.retry_after_ms;
    return 0;
}

void sl__proxy_adaptive_complete(struct sl__proxy_config *pc)
{
    pc->n_adaptive = 0;
    for (size_t i = 0; i < pc->n_routes; i++) {
        struct sl__proxy_adaptive *ad = pc->routes[i].ad;
        if (ad == NULL)
            continue;
        ad->index = (unsigned)pc->n_adaptive++;
        if (ad->board == NULL)
            ad->board = sl__xzalloc(sizeof(*ad->board));
    }
}

void sl__proxy_adaptive_free(struct sl__proxy_adaptive *ad)
{
    if (ad == NULL)
        return;
    for (unsigned k = 0; k < SL_PARTITION_MAX; k++)
        free(ad->classes[k]);
    free(ad->class_header);
    if (ad->board != NULL)
        for (unsigned w = 0; w < SL__PROXY_MAX_WORKERS; w++)
            free(atomic_load_explicit(&ad->board->w[w], memory_order_acquire));
    free(ad->board);
    free(ad);
}
