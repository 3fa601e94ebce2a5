/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_descr.c - the descriptors of a request (proxy_descr.h): Envoy's
 * rate limit actions over the proxy's parsed head. Header names are
 * compared case-insensitively; the pseudo-headers Envoy's matchers use
 * (":method", ":path", ":authority", ":scheme") read the request line and
 * Host. A request header used as a value is its first occurrence (as
 * Envoy's request_headers); a header matched is every occurrence joined
 * with "," (as Envoy's HeaderMatcher).
 *
 * It builds entries only; the decision and its answer are proxy_gate.c's.
 */
#include <string.h>
#include <strings.h>

#include "proxy_descr.h"

/* The value of header `lname` (first occurrence), or a pseudo-header. */
static bool first_value(const struct sl__proxy_head *h, const char *lname, struct sl_str *v)
{
    if (lname[0] == ':') {
        if (strcmp(lname, ":method") == 0)
            *v = h->method;
        else if (strcmp(lname, ":path") == 0)
            *v = h->target;
        else if (strcmp(lname, ":authority") == 0)
            *v = h->host;
        else if (strcmp(lname, ":scheme") == 0)
            *v = (struct sl_str){"http", 4};
        else
            return false;
        return v->p != NULL;
    }
    for (unsigned i = 0; i < h->n_hdrs; i++) {
        if (sl__proxy_ieq(h->hdrs[i].name, lname)) {
            *v = h->hdrs[i].value;
            return true;
        }
    }
    return false;
}

/* Every occurrence of `lname` joined with "," into join (as Envoy reads a
 * header for matching). */
static bool all_values(const struct sl__proxy_head *h, const char *lname, char *join,
                       struct sl_str *v)
{
    size_t n = 0, found = 0;

    if (lname[0] == ':')
        return first_value(h, lname, v);
    for (unsigned i = 0; i < h->n_hdrs; i++) {
        struct sl_str s = h->hdrs[i].value;
        if (!sl__proxy_ieq(h->hdrs[i].name, lname))
            continue;
        if (found++ == 0) {
            *v = s;
            continue;
        }
        if (found == 2) { /* a second one: copy the first, then join */
            memcpy(join, v->p, v->len);
            n = v->len;
        }
        if (n + 1 + s.len > SL__PROXY_MAX_HEAD)
            break; /* cannot happen: the whole head is at most that */
        join[n++] = ',';
        memcpy(join + n, s.p, s.len);
        n += s.len;
        *v = (struct sl_str){join, n};
    }
    return found > 0;
}

static bool has_at(struct sl_str s, size_t at, const char *want, size_t wn, bool icase)
{
    return at + wn <= s.len &&
           (icase ? strncasecmp(s.p + at, want, wn) == 0 : memcmp(s.p + at, want, wn) == 0);
}

/* One matcher, Envoy's HeaderUtility::matchHeaders without regexes. */
static bool hmatch(const struct sl__proxy_hmatch *m, const struct sl__proxy_head *h, char *join)
{
    struct sl_str v;
    size_t wn = m->value ? strlen(m->value) : 0;
    bool match = false;

    if (!all_values(h, m->name, join, &v))
        return m->kind == SL__PM_PRESENT && (m->invert ? m->present : !m->present);
    switch (m->kind) {
    case SL__PM_EXACT:
        match = v.len == wn && has_at(v, 0, m->value, wn, m->ignore_case);
        break;
    case SL__PM_PREFIX:
        match = has_at(v, 0, m->value, wn, m->ignore_case);
        break;
    case SL__PM_SUFFIX:
        match = v.len >= wn && has_at(v, v.len - wn, m->value, wn, m->ignore_case);
        break;
    case SL__PM_CONTAINS:
        for (size_t at = 0; !match && at + wn <= v.len; at++)
            match = has_at(v, at, m->value, wn, m->ignore_case);
        break;
    case SL__PM_PRESENT:
        match = m->present;
        break;
    }
    return match != m->invert;
}

static struct sl_str cstr(const char *s)
{
    return (struct sl_str){s, strlen(s)};
}

/* The target without its query string. */
static struct sl_str path_of(struct sl_str target)
{
    const char *q = memchr(target.p, '?', target.len);
    return q ? (struct sl_str){target.p, (size_t)(q - target.p)} : target;
}

/* The value of action `a`: 1 an entry in *v, 0 no entry (skipped), -1
 * the descriptor is dropped. `text` holds an address written out. */
static int action_value(const struct sl__proxy_action *a, const struct sl__proxy_head *h,
                        const struct sl__proxy_ip *client, struct sl__proxy_descr *out, char *text,
                        struct sl_str *v)
{
    struct sl__proxy_ip ip = *client;
    bool all = true;
    size_t n;

    switch (a->kind) {
    case SL__PA_REMOTE_ADDRESS:
    case SL__PA_MASKED_REMOTE:
        if (ip.family == 0)
            return -1;
        if (a->kind == SL__PA_MASKED_REMOTE)
            sl__proxy_ip_mask(&ip, ip.family == 4 ? a->v4_bits : a->v6_bits);
        n = sl__proxy_ip_text(&ip,
                              a->kind == SL__PA_REMOTE_ADDRESS ? -1
                              : ip.family == 4                 ? a->v4_bits
                                                               : a->v6_bits,
                              text, SL__PROXY_ADDR_TEXT);
        *v = (struct sl_str){text, n};
        return n > 0 ? 1 : -1;
    case SL__PA_REQUEST_HEADERS:
        if (first_value(h, a->header, v))
            return 1;
        return a->skip_if_absent ? 0 : -1;
    case SL__PA_GENERIC_KEY:
        *v = cstr(a->value);
        return 1;
    case SL__PA_HEADER_VALUE_MATCH:
        for (size_t i = 0; all && i < a->n_matchers; i++)
            all = hmatch(&a->matchers[i], h, out->join);
        *v = cstr(a->value);
        return all == a->expect_match ? 1 : -1;
    case SL__PA_PATH:
        *v = path_of(h->target);
        return 1;
    case SL__PA_METHOD:
        *v = h->method;
        return 1;
    }
    return -1;
}

size_t sl__proxy_descr_build(const struct sl__proxy_limits *l, const struct sl__proxy_head *h,
                             const struct sl__proxy_ip *client, struct sl__proxy_descr *out)
{
    size_t nd = 0, ne = 0;

    for (size_t r = 0; r < l->n_rls && nd < SL_MAX_DESCRIPTORS; r++) {
        const struct sl__proxy_rate_limit *rl = &l->rls[r];
        size_t first = ne;
        int got = 1;
        for (size_t k = 0; got >= 0 && k < rl->n_actions && ne < SL__PROXY_MAX_ACTIONS; k++) {
            struct sl_str v;
            got = action_value(&rl->actions[k], h, client, out, out->text[ne], &v);
            if (got == 1) {
                out->e[ne].key = cstr(rl->actions[k].key);
                out->e[ne].value = v;
                ne++;
            }
        }
        if (got < 0 || ne == first) {
            ne = first; /* dropped, or nothing in it */
            continue;
        }
        out->d[nd] = (struct sl_descriptor){
            .entries = &out->e[first], .n_entries = ne - first, .hits = -1, .limit = NULL};
        nd++;
    }
    return nd;
}
