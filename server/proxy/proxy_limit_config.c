/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_limit_config.c - the limiting keys of a route and of the `proxy:`
 * section: `domain`, `rate_limits` (Envoy's actions, validated as Envoy's
 * configuration would be, errors at file:line:col), how a delay and a
 * denial are answered (max_delay, max_queue, deny_status, deny_body,
 * deny_text, headers), and where the client's address comes from
 * (proxy.trusted_proxies, proxy.client_header).
 *
 * It parses and checks; building descriptors is proxy_descr.c's.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proxy_int.h"
#include "xalloc.h"

#define MAX_TRUSTED 64

const char *const sl__proxy_deny_body_names[] = {"problem", "envelope", "text", NULL};
const char *const sl__proxy_client_header_names[] = {"x-forwarded-for", "forwarded", NULL};

#define L(member) SL__KF(struct sl__proxy_limits, member)
static const struct sl__key lim_keys[] = {
    {"domain", SL__K_STR, L(domain), NULL, ""},
    {"max_delay", SL__K_DUR_MS, L(max_delay_ms), NULL, ""},
    {"max_queue", SL__K_UINT, L(max_queue), NULL, "", .max = 1000000},
    {"deny_status", SL__K_UINT, L(deny_status), NULL, "", .min = 400, .max = 599},
    {"deny_body", SL__K_CHOICE, L(deny_body), NULL, "", .choices = sl__proxy_deny_body_names},
    {"deny_text", SL__K_STR, L(deny_text), NULL, ""},
};
#define NLIM_KEYS (sizeof(lim_keys) / sizeof(lim_keys[0]))

/* ------------------------------------------------------------ helpers */

typedef int (*pair_fn)(struct sl__config_ctx *x, void *arg, const char *k, yaml_node_t *kn,
                       yaml_node_t *v);

/* Call fn for every pair of mapping m (an empty scalar is an empty mapping,
 * as `remote_address:` writes {}). */
static int each_pair(struct sl__config_ctx *x, yaml_node_t *m, const char *what, pair_fn fn,
                     void *arg)
{
    yaml_document_t *doc = sl__config_doc(x);
    const char *s = sl__config_scalar(m);

    if (s != NULL && *s == '\0')
        return 0;
    if (m->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, m, "%s must be a mapping", what);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        if (ks == NULL)
            return sl__config_fail(x, k, "%s: keys are words", what);
        if (fn(x, arg, ks, k, v) != 0)
            return -1;
    }
    return 0;
}

static int str_value(struct sl__config_ctx *x, yaml_node_t *v, const char *key, char **out)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || *s == '\0')
        return sl__config_fail(x, v, "%s must be a non-empty string", key);
    free(*out);
    *out = sl__xstrndup(s, strlen(s));
    return 0;
}

static int bool_value(struct sl__config_ctx *x, yaml_node_t *v, const char *key, bool *out)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || (strcmp(s, "true") != 0 && strcmp(s, "false") != 0))
        return sl__config_fail(x, v, "%s must be true or false", key);
    *out = s[0] == 't';
    return 0;
}

static int bits_value(struct sl__config_ctx *x, yaml_node_t *v, const char *key, unsigned max,
                      uint8_t *out)
{
    const char *s = sl__config_scalar(v);
    uint64_t n;

    if (s == NULL || sl__keytab_parse_u64(s, max, &n) != 0)
        return sl__config_fail(x, v, "%s must be a prefix length from 0 to %u", key, max);
    *out = (uint8_t)n;
    return 0;
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* ------------------------------------------------------------ header matchers */

static const struct {
    const char *name;
    enum sl__proxy_match_kind kind;
} match_keys[] = {
    {"exact_match", SL__PM_EXACT},   {"prefix_match", SL__PM_PREFIX},
    {"suffix_match", SL__PM_SUFFIX}, {"contains_match", SL__PM_CONTAINS},
    {"exact", SL__PM_EXACT},         {"prefix", SL__PM_PREFIX},
    {"suffix", SL__PM_SUFFIX},       {"contains", SL__PM_CONTAINS},
};

struct mctx {
    struct sl__proxy_hmatch *m;
    int kinds; /* match specifiers seen */
};

static int set_match(struct sl__config_ctx *x, struct mctx *mc, enum sl__proxy_match_kind kind,
                     const char *k, yaml_node_t *v)
{
    mc->m->kind = kind;
    mc->kinds++;
    return str_value(x, v, k, &mc->m->value);
}

static int string_match_pair(struct sl__config_ctx *x, void *arg, const char *k, yaml_node_t *kn,
                             yaml_node_t *v)
{
    struct mctx *mc = arg;

    if (strcmp(k, "ignore_case") == 0)
        return bool_value(x, v, k, &mc->m->ignore_case);
    for (size_t i = 4; i < sizeof(match_keys) / sizeof(match_keys[0]); i++)
        if (strcmp(k, match_keys[i].name) == 0)
            return set_match(x, mc, match_keys[i].kind, k, v);
    return sl__config_fail(x, kn,
                           "unknown string_match key '%s' (exact, prefix, suffix, contains, "
                           "ignore_case; regexes are not supported)",
                           k);
}

static int matcher_pair(struct sl__config_ctx *x, void *arg, const char *k, yaml_node_t *kn,
                        yaml_node_t *v)
{
    struct mctx *mc = arg;

    if (strcmp(k, "name") == 0) {
        if (str_value(x, v, k, &mc->m->name) != 0)
            return -1;
        lower(mc->m->name);
        return 0;
    }
    if (strcmp(k, "invert_match") == 0)
        return bool_value(x, v, k, &mc->m->invert);
    if (strcmp(k, "present_match") == 0) {
        mc->m->kind = SL__PM_PRESENT;
        mc->kinds++;
        return bool_value(x, v, k, &mc->m->present);
    }
    if (strcmp(k, "string_match") == 0)
        return each_pair(x, v, "string_match", string_match_pair, mc);
    for (size_t i = 0; i < 4; i++)
        if (strcmp(k, match_keys[i].name) == 0)
            return set_match(x, mc, match_keys[i].kind, k, v);
    return sl__config_fail(x, kn,
                           "unknown header matcher key '%s' (name, exact_match, prefix_match, "
                           "suffix_match, contains_match, present_match, string_match, "
                           "invert_match)",
                           k);
}

static int load_matchers(struct sl__config_ctx *x, struct sl__proxy_action *a, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);

    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.top == v->data.sequence.items.start)
        return sl__config_fail(x, v,
                               "headers must be a list of header matchers, e.g. "
                               "[{name: x-tier, exact_match: free}]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        struct mctx mc;
        a->matchers = sl__xrealloc(a->matchers, (a->n_matchers + 1) * sizeof(*a->matchers));
        mc.m = &a->matchers[a->n_matchers++];
        memset(mc.m, 0, sizeof(*mc.m));
        mc.m->kind = SL__PM_PRESENT; /* no specifier: the header is present */
        mc.m->present = true;
        mc.kinds = 0;
        if (each_pair(x, n, "a header matcher", matcher_pair, &mc) != 0)
            return -1;
        if (mc.m->name == NULL)
            return sl__config_fail(x, n, "a header matcher needs a name");
        if (mc.kinds > 1)
            return sl__config_fail(x, n, "a header matcher has one match specifier");
    }
    return 0;
}

/* ------------------------------------------------------------ actions */

struct kind_info {
    const char *name;
    enum sl__proxy_action_kind kind;
    const char *key;     /* the default descriptor_key; NULL: required */
    const char *allowed; /* the keys it takes, for the message */
};

static const struct kind_info kinds[] = {
    {"remote_address", SL__PA_REMOTE_ADDRESS, "remote_address", "none"},
    {"masked_remote_address", SL__PA_MASKED_REMOTE, "masked_remote_address",
     "v4_prefix_mask_len, v6_prefix_mask_len"},
    {"request_headers", SL__PA_REQUEST_HEADERS, NULL,
     "header_name, descriptor_key, skip_if_absent"},
    {"generic_key", SL__PA_GENERIC_KEY, "generic_key", "descriptor_value, descriptor_key"},
    {"header_value_match", SL__PA_HEADER_VALUE_MATCH, "header_match",
     "descriptor_value, descriptor_key, expect_match, headers"},
    {"path", SL__PA_PATH, "path", "descriptor_key"},
    {"method", SL__PA_METHOD, "method", "descriptor_key"},
};

struct actx {
    struct sl__proxy_action *a;
    const struct kind_info *info;
};

static int action_pair(struct sl__config_ctx *x, void *arg, const char *k, yaml_node_t *kn,
                       yaml_node_t *v)
{
    struct actx *ac = arg;
    struct sl__proxy_action *a = ac->a;
    enum sl__proxy_action_kind kd = a->kind;

    if (strcmp(k, "descriptor_key") == 0 && kd != SL__PA_REMOTE_ADDRESS &&
        kd != SL__PA_MASKED_REMOTE)
        return str_value(x, v, k, &a->key);
    if (strcmp(k, "descriptor_value") == 0 &&
        (kd == SL__PA_GENERIC_KEY || kd == SL__PA_HEADER_VALUE_MATCH))
        return str_value(x, v, k, &a->value);
    if (kd == SL__PA_REQUEST_HEADERS && strcmp(k, "header_name") == 0) {
        if (str_value(x, v, k, &a->header) != 0)
            return -1;
        lower(a->header);
        return 0;
    }
    if (kd == SL__PA_REQUEST_HEADERS && strcmp(k, "skip_if_absent") == 0)
        return bool_value(x, v, k, &a->skip_if_absent);
    if (kd == SL__PA_HEADER_VALUE_MATCH && strcmp(k, "expect_match") == 0)
        return bool_value(x, v, k, &a->expect_match);
    if (kd == SL__PA_HEADER_VALUE_MATCH && strcmp(k, "headers") == 0)
        return load_matchers(x, a, v);
    if (kd == SL__PA_MASKED_REMOTE && strcmp(k, "v4_prefix_mask_len") == 0)
        return bits_value(x, v, k, 32, &a->v4_bits);
    if (kd == SL__PA_MASKED_REMOTE && strcmp(k, "v6_prefix_mask_len") == 0)
        return bits_value(x, v, k, 128, &a->v6_bits);
    return sl__config_fail(x, kn, "%s: unknown key '%s' (it takes: %s)", ac->info->name, k,
                           ac->info->allowed);
}

/* What an action must have once read. */
static int action_complete(struct sl__config_ctx *x, struct actx *ac, yaml_node_t *n)
{
    struct sl__proxy_action *a = ac->a;

    if (a->key == NULL && ac->info->key != NULL)
        a->key = sl__xstrndup(ac->info->key, strlen(ac->info->key));
    switch (a->kind) {
    case SL__PA_REQUEST_HEADERS:
        if (a->header == NULL || a->key == NULL)
            return sl__config_fail(x, n, "request_headers needs header_name and descriptor_key");
        break;
    case SL__PA_GENERIC_KEY:
    case SL__PA_HEADER_VALUE_MATCH:
        if (a->value == NULL)
            return sl__config_fail(x, n, "%s needs descriptor_value", ac->info->name);
        if (a->kind == SL__PA_HEADER_VALUE_MATCH && a->n_matchers == 0)
            return sl__config_fail(x, n, "header_value_match needs headers: [matchers]");
        break;
    default:
        break;
    }
    return 0;
}

/* One item of `actions`: a mapping with one key, the action's name. */
static int load_action(struct sl__config_ctx *x, struct sl__proxy_action *a, yaml_node_t *n)
{
    yaml_document_t *doc = sl__config_doc(x);
    yaml_node_pair_t *p;
    struct actx ac = {a, NULL};
    const char *name;

    memset(a, 0, sizeof(*a));
    a->v4_bits = 32;
    a->v6_bits = 128;
    a->expect_match = true;
    if (n->type != YAML_MAPPING_NODE ||
        n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1)
        return sl__config_fail(x, n,
                               "an action is one of remote_address, masked_remote_address, "
                               "request_headers, generic_key, header_value_match, path, "
                               "method, e.g. {remote_address: {}}");
    p = n->data.mapping.pairs.start;
    name = sl__config_scalar(yaml_document_get_node(doc, p->key));
    for (size_t i = 0; name != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(name, kinds[i].name) == 0)
            ac.info = &kinds[i];
    if (ac.info == NULL)
        return sl__config_fail(x, yaml_document_get_node(doc, p->key),
                               "unknown action '%s' (remote_address, masked_remote_address, "
                               "request_headers, generic_key, header_value_match, path, method)",
                               name ? name : "?");
    a->kind = ac.info->kind;
    if (each_pair(x, yaml_document_get_node(doc, p->value), ac.info->name, action_pair, &ac) != 0)
        return -1;
    return action_complete(x, &ac, n);
}

static int rate_limit_pair(struct sl__config_ctx *x, void *arg, const char *k, yaml_node_t *kn,
                           yaml_node_t *v)
{
    struct sl__proxy_rate_limit *rl = arg;
    yaml_document_t *doc = sl__config_doc(x);

    if (strcmp(k, "actions") != 0)
        return sl__config_fail(x, kn, "unknown rate_limits key '%s' (actions)", k);
    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.top == v->data.sequence.items.start)
        return sl__config_fail(x, v, "actions must be a list, e.g. [{remote_address: {}}]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        if (rl->n_actions == SL_MAX_ENTRIES)
            return sl__config_fail(x, v, "at most %d actions (a descriptor's entries)",
                                   SL_MAX_ENTRIES);
        rl->actions = sl__xrealloc(rl->actions, (rl->n_actions + 1) * sizeof(*rl->actions));
        if (load_action(x, &rl->actions[rl->n_actions++], yaml_document_get_node(doc, *it)) != 0)
            return -1;
    }
    return 0;
}

static int load_rate_limits(struct sl__config_ctx *x, struct sl__proxy_limits *l, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "rate_limits must be a list of {actions: [...]}");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        struct sl__proxy_rate_limit *rl;
        if (l->n_rls == SL_MAX_DESCRIPTORS)
            return sl__config_fail(x, n, "at most %d rate_limits (descriptors) per route",
                                   SL_MAX_DESCRIPTORS);
        l->rls = sl__xrealloc(l->rls, (l->n_rls + 1) * sizeof(*l->rls));
        rl = &l->rls[l->n_rls++];
        memset(rl, 0, sizeof(*rl));
        if (each_pair(x, n, "a rate_limits item", rate_limit_pair, rl) != 0)
            return -1;
        if (rl->n_actions == 0)
            return sl__config_fail(x, n, "a rate_limits item needs actions");
        for (size_t k = 0; k < rl->n_actions; k++)
            l->uses_address = l->uses_address || rl->actions[k].kind == SL__PA_REMOTE_ADDRESS ||
                              rl->actions[k].kind == SL__PA_MASKED_REMOTE;
    }
    return 0;
}

/* ------------------------------------------------------------ header families */

static int load_families(struct sl__config_ctx *x, const char *what, yaml_node_t *v, unsigned *out)
{
    yaml_document_t *doc = sl__config_doc(x);
    unsigned mask = 0, bits;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "%s must be a list, e.g. [ietf, x-ratelimit, retry-after]",
                               what);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        if (s == NULL || sl__hdr_family_parse(s, strlen(s), &bits) != SL_OK)
            return sl__config_fail(
                x, n, "%s: unknown family '%s' (ietf, x-ratelimit, retry-after, all, none)", what,
                s ? s : "?");
        mask |= bits;
    }
    *out = mask;
    return 0;
}

/* ------------------------------------------------------------ the route's keys */

void sl__proxy_limit_init(struct sl__proxy_limits *l)
{
    memset(l, 0, sizeof(*l));
    l->max_delay_ms = SL__PROXY_UNSET_MS;
    l->max_queue = SL__PROXY_UNSET_U;
    l->deny_status = SL__PROXY_UNSET_STATUS;
    l->deny_body = SL__PROXY_UNSET_U;
}

int sl__proxy_limit_key(struct sl__config_ctx *x, struct sl__proxy_limits *l, const char *key,
                        yaml_node_t *v)
{
    const struct sl__key *k;
    char msg[256];

    if (strcmp(key, "rate_limits") == 0)
        return load_rate_limits(x, l, v) == 0 ? 0 : -1;
    if (strcmp(key, "headers") == 0) {
        l->headers_set = true;
        return load_families(x, "headers", v, &l->headers) == 0 ? 0 : -1;
    }
    if ((k = sl__keytab_find(lim_keys, NLIM_KEYS, key)) == NULL)
        return 1;
    if (sl__config_scalar(v) == NULL)
        return sl__config_fail(x, v, "%s must be a scalar", key);
    if (sl__keytab_set(k, l, sl__config_scalar(v), NULL, msg, sizeof(msg)) != 0)
        return sl__config_fail(x, v, "%s", msg);
    return 0;
}

int sl__proxy_limit_complete(const struct sl__proxy_config *pc, unsigned http_headers,
                             struct sl__proxy_limits *l, const char **why)
{
    if (l->max_delay_ms == SL__PROXY_UNSET_MS)
        l->max_delay_ms = pc->max_delay_ms;
    if (l->max_queue == SL__PROXY_UNSET_U)
        l->max_queue = pc->max_queue;
    if (l->deny_status == SL__PROXY_UNSET_STATUS)
        l->deny_status = (int)pc->deny_status;
    if (l->deny_body == SL__PROXY_UNSET_U)
        l->deny_body = pc->deny_body;
    if (l->deny_text == NULL && pc->deny_text != NULL)
        l->deny_text = sl__xstrndup(pc->deny_text, strlen(pc->deny_text));
    if (!l->headers_set)
        l->headers = http_headers;
    if (l->n_rls > 0 && l->domain == NULL) {
        *why = "rate_limits need a domain: the rules' domain the descriptors are decided in";
        return SL_EINVAL;
    }
    if (l->deny_body == SL__PD_TEXT && l->deny_text == NULL) {
        *why = "deny_body: text needs deny_text (here or as proxy.deny_text)";
        return SL_EINVAL;
    }
    return SL_OK;
}

static void action_free(struct sl__proxy_action *a)
{
    free(a->key);
    free(a->value);
    free(a->header);
    for (size_t i = 0; i < a->n_matchers; i++) {
        free(a->matchers[i].name);
        free(a->matchers[i].value);
    }
    free(a->matchers);
}

void sl__proxy_limit_free(struct sl__proxy_limits *l)
{
    for (size_t r = 0; r < l->n_rls; r++) {
        for (size_t k = 0; k < l->rls[r].n_actions; k++)
            action_free(&l->rls[r].actions[k]);
        free(l->rls[r].actions);
    }
    free(l->rls);
    sl__keytab_free(lim_keys, NLIM_KEYS, l);
    memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------ the section's keys */

int sl__proxy_trusted_load(struct sl__config_ctx *x, struct sl__proxy_config *pc, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    const char *why;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "proxy.trusted_proxies must be a list, e.g. [10.0.0.0/8]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        if (pc->n_trusted == MAX_TRUSTED)
            return sl__config_fail(x, n, "at most %d trusted proxies", MAX_TRUSTED);
        if (s == NULL) /* a list or a mapping: no text, and no reason from the parser */
            return sl__config_fail(x, n,
                                   "a trusted proxy is an address or a CIDR range, e.g. "
                                   "10.0.0.0/8 (got a list or a mapping)");
        pc->trusted = sl__xrealloc(pc->trusted, (pc->n_trusted + 1) * sizeof(*pc->trusted));
        if (!sl__proxy_cidr_parse(s, &pc->trusted[pc->n_trusted], &why))
            return sl__config_fail(x, n, "%s (got '%s')", why, s);
        pc->n_trusted++;
    }
    return 0;
}

void sl__proxy_limit_help(FILE *out)
{
    sl__keytab_help_line(out, "proxy.trusted_proxies", "[]",
                         "addresses or CIDR ranges of proxies in front whose");
    sl__keytab_help_line(out, "", "",
                         "proxy.client_header is believed; none: the peer is the client");
}
