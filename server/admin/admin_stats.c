/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin_stats.c - GET /v1/stats: the operator's view as one JSON document
 * for the dashboard (GET /ui) and `sluice top`: per (domain, limit) the
 * per-second series of the last seconds, its totals and recent rates and
 * its top limited keys; the store's round trips, readiness and its own
 * state; the kill switches; the loaded rules; what the rooms add (the
 * proxy's adaptive concurrency limits, "adaptive"; the gRPC room's xDS
 * client, "xds", and RLQS pools, "rlqs"). docs/operations.md says what
 * each number means.
 *
 *   GET /v1/stats?seconds=S&top=K   S in 1..900 (60), K in 1..100 (10)
 *
 * It reads (stats_read.c merges the workers' blocks) and formats; it
 * counts nothing. Admin-only (the router puts it behind the gate); it
 * allocates, as every admin endpoint does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "clock.h"
#include "conn.h"
#include "http_query.h"
#include "killswitch.h"
#include "proto.h"
#include "server-t.h"
#include "stats.h"
#include "stores.h"
#include "worker-t.h"
#include "worker.h"

static const char *const outcome_names[SL__ST_N] = {"allow", "delay", "deny", "shadow_deny"};
static const char *const key_mode_names[] = {"values", "hash", "truncate"};

#define RECENT_S 10.0 /* the window of "rate" (stats_read.c's RECENT) */

/* A number query parameter in [lo, hi], else `def`. */
static unsigned param(const struct sl__qpair *p, int n, const char *name, unsigned def, unsigned lo,
                      unsigned hi)
{
    for (int i = 0; i < n; i++) {
        if (p[i].name.len == strlen(name) && memcmp(p[i].name.p, name, p[i].name.len) == 0) {
            char buf[16];
            size_t l = p[i].value.len < sizeof(buf) - 1 ? p[i].value.len : sizeof(buf) - 1;
            memcpy(buf, p[i].value.p, l);
            buf[l] = '\0';
            unsigned long v = strtoul(buf, NULL, 10);
            return v < lo ? lo : v > hi ? hi : (unsigned)v;
        }
    }
    return def;
}

static cJSON *numbers(const uint64_t *v, size_t n, size_t stride, size_t at)
{
    cJSON *a = cJSON_CreateArray();

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i * stride + at]));
    return a;
}

static cJSON *str_n(const char *p, size_t n)
{
    char buf[256];

    n = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return cJSON_CreateString(buf);
}

/* Is s[0..n) valid UTF-8? (A key is shown as sent; one that is not valid
 * is shown with '?' and marked partial.) */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : s[i] >= 0xf0 ? 4 : s[i] >= 0xe0 ? 3 : s[i] >= 0xc2 ? 2 : 0;
        if (len == 0 || s[i] > 0xf4 || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

/* {"key": "user=alice, path=/x", "entries": [{"key","value"}], "count",
 * "error", "partial"}: entries only for a key kept whole. */
static cJSON *key_json(const struct sl__stats_key_view *k, unsigned mode)
{
    cJSON *o = cJSON_CreateObject(), *entries = NULL;
    char text[SL__STATS_KEY_MAX * 2 + 2], shown[SL__STATS_KEY_MAX * 2 + 2];
    size_t n = 0, from = 0;
    bool partial = k->partial;

    memcpy(text, k->text, k->len);
    if (!utf8_ok((const unsigned char *)text, k->len)) {
        for (size_t i = 0; i < k->len; i++)
            if ((unsigned char)text[i] >= 0x80)
                text[i] = '?';
        partial = true;
    }
    if (mode == SL__STATS_KEYS_HASH) {
        n = (size_t)snprintf(shown, sizeof(shown), "#%.*s", (int)k->len, text);
    } else {
        if (!partial)
            entries = cJSON_CreateArray();
        for (size_t i = 0; i <= k->len; i++) {
            if (i < k->len && text[i] != SL__STATS_RS)
                continue;
            const char *e = text + from, *us = memchr(e, SL__STATS_US, i - from);
            size_t kl = us != NULL ? (size_t)(us - e) : i - from;
            size_t vl = us != NULL ? i - from - kl - 1 : 0;
            n += (size_t)snprintf(shown + n, sizeof(shown) - n, "%s%.*s=%.*s%s", from ? ", " : "",
                                  (int)kl, e, (int)vl, us != NULL ? us + 1 : "",
                                  partial && i == k->len ? "..." : "");
            if (entries != NULL) {
                cJSON *en = cJSON_CreateObject();
                cJSON_AddItemToObject(en, "key", str_n(e, kl));
                cJSON_AddItemToObject(en, "value", str_n(us != NULL ? us + 1 : "", vl));
                cJSON_AddItemToArray(entries, en);
            }
            from = i + 1;
            if (n >= sizeof(shown))
                n = sizeof(shown) - 1;
        }
    }
    cJSON_AddItemToObject(o, "key", str_n(shown, n));
    if (entries != NULL)
        cJSON_AddItemToObject(o, "entries", entries);
    cJSON_AddNumberToObject(o, "count", (double)k->count);
    cJSON_AddNumberToObject(o, "error", (double)k->err);
    cJSON_AddBoolToObject(o, "partial", partial);
    return o;
}

static cJSON *series_json(const struct sl__stats_series_view *m, unsigned seconds, unsigned mode)
{
    cJSON *o = cJSON_CreateObject(), *tot = cJSON_CreateObject(), *rate = cJSON_CreateObject();
    cJSON *top = cJSON_CreateArray();

    cJSON_AddItemToObject(o, "domain", str_n(m->domain, m->domain_len));
    cJSON_AddItemToObject(o, "limit", str_n(m->limit, m->limit_len));
    for (int k = 0; k < SL__ST_N; k++) {
        cJSON_AddItemToObject(o, outcome_names[k], numbers(m->n, seconds, SL__ST_N, (size_t)k));
        cJSON_AddNumberToObject(tot, outcome_names[k], (double)m->total[k]);
        cJSON_AddNumberToObject(rate, outcome_names[k], (double)m->recent[k] / RECENT_S);
    }
    cJSON_AddItemToObject(o, "total", tot);
    cJSON_AddItemToObject(o, "rate", rate);
    for (size_t i = 0; i < m->n_top; i++)
        cJSON_AddItemToArray(top, key_json(&m->top[i], mode));
    cJSON_AddItemToObject(o, "top", top);
    return o;
}

/* As /healthz?verbose names the stores' states (stores.h). */
static const char *const healths[] = {"up", "degraded", "starting", "down"};

static cJSON *store_json(const struct sl__server *srv, const struct sl__stats_view *v)
{
    cJSON *o = cJSON_CreateObject(), *state;
    enum sl__stores_state health;
    char why[256];
    char buf[SL__STATUS_STORE_MAX + 2];
    size_t len = 1;

    cJSON_AddStringToObject(o, "type", sl__server_store_type(srv));
    health = sl__server_stores_health(srv, why, sizeof(why));
    cJSON_AddBoolToObject(o, "ready", health == SL__STORES_UP || health == SL__STORES_DEGRADED);
    cJSON_AddStringToObject(o, "health", healths[(unsigned)health & 3]);
    cJSON_AddStringToObject(o, "why", why);
    cJSON_AddItemToObject(o, "calls", numbers(v->store_calls, v->seconds, 1, 0));
    cJSON_AddItemToObject(o, "failures", numbers(v->store_failures, v->seconds, 1, 0));
    cJSON_AddItemToObject(o, "p50_ns", numbers(v->store_p50_ns, v->seconds, 1, 0));
    cJSON_AddItemToObject(o, "p99_ns", numbers(v->store_p99_ns, v->seconds, 1, 0));
    cJSON_AddNumberToObject(o, "p50_ns_recent", (double)v->store_p50_ns_recent);
    cJSON_AddNumberToObject(o, "p99_ns_recent", (double)v->store_p99_ns_recent);
    buf[0] = '{';
    sl__server_store_status(srv, buf, sizeof(buf) - 1, &len);
    buf[len++] = '}';
    state = cJSON_ParseWithLength(buf, len);
    cJSON_AddItemToObject(o, "state", state != NULL ? state : cJSON_CreateObject());
    return o;
}

static void add_switch(void *arg, const char *domain, enum sl__ks_mode mode)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "domain", domain);
    cJSON_AddStringToObject(o, "mode", sl__ks_mode_name(mode));
    cJSON_AddItemToArray(arg, o);
}

/* The rule's domain: the longest prefix of its path before a '.' that the
 * snapshot has as a domain (domains may hold dots). */
static size_t domain_of(const sl_rules *rules, const char *path)
{
    size_t best = 0;

    for (const char *dot = strchr(path, '.'); dot != NULL; dot = strchr(dot + 1, '.'))
        if (sl_rules_has_domain(rules, (struct sl_str){path, (size_t)(dot - path)}))
            best = (size_t)(dot - path);
    return best != 0 ? best : strcspn(path, ".");
}

struct rules_walk {
    const sl_rules *rules;
    cJSON *list;
};

static void add_rule(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
                     bool unlimited)
{
    struct rules_walk *rw = arg;
    cJSON *o = cJSON_CreateObject();

    cJSON_AddItemToObject(o, "domain", str_n(path, domain_of(rw->rules, path)));
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddBoolToObject(o, "unlimited", unlimited);
    cJSON_AddBoolToObject(o, "quota_mode", quota_mode);
    if (l != NULL) {
        cJSON_AddStringToObject(o, "name", l->name != NULL ? l->name : "");
        cJSON_AddStringToObject(o, "algorithm", sl_algo_name(l->algo));
        cJSON_AddNumberToObject(o, "requests", (double)l->requests);
        cJSON_AddNumberToObject(o, "period_ms", (double)(l->period_ns / SL_NS_PER_MS));
        cJSON_AddBoolToObject(o, "shadow", l->shadow);
    }
    cJSON_AddItemToArray(rw->list, o);
}

/* The rooms' own members (the proxy's "adaptive"), rendered by them
 * (proto.h) as the text of an object's members. */
static void add_rooms(const struct sl__server *srv, cJSON *doc)
{
    struct sl__buf text = {0};
    cJSON *rooms, *item;

    sl__buf_append(&text, "{\"\":0", 5);
    sl__protos_render_stats(srv, &text);
    sl__buf_append(&text, "}", 2); /* and the NUL */
    rooms = cJSON_Parse(text.p);
    sl__buf_free(&text);
    if (rooms == NULL)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(rooms, "");
    while ((item = rooms->child) != NULL) {
        cJSON_DetachItemViaPointer(rooms, item);
        cJSON_AddItemToObject(doc, item->string, item);
    }
    cJSON_Delete(rooms);
}

static cJSON *view_json(struct sl__conn *c, const struct sl__stats_view *v, unsigned seconds)
{
    struct sl__server *srv = c->w->srv;
    cJSON *doc = cJSON_CreateObject(), *series = cJSON_AddArrayToObject(doc, "series");
    struct rules_walk rw = {sl__worker_rules(c->w), NULL};

    cJSON_AddBoolToObject(doc, "enabled", srv->stats != NULL);
    cJSON_AddNumberToObject(doc, "now", (double)v->now_s);
    cJSON_AddNumberToObject(doc, "seconds", seconds);
    cJSON_AddNumberToObject(doc, "workers", srv->n_workers);
    cJSON_AddStringToObject(doc, "io", c->w->ring != NULL ? "io_uring" : "readiness");
    cJSON_AddStringToObject(doc, "keys", key_mode_names[v->keys % 3]);
    cJSON_AddNumberToObject(doc, "top_window_ms", (double)v->window_ms);
    cJSON_AddNumberToObject(doc, "dropped", (double)v->dropped);
    for (size_t i = 0; i < v->n_series; i++)
        cJSON_AddItemToArray(series, series_json(&v->series[i], seconds, v->keys));
    cJSON_AddItemToObject(doc, "store", store_json(srv, v));
    sl__ks_list(&srv->ks, add_switch, cJSON_AddArrayToObject(doc, "killswitches"));
    rw.list = cJSON_AddArrayToObject(doc, "rules");
    sl_rules_foreach_limit(rw.rules, add_rule, &rw);
    add_rooms(srv, doc);
    return doc;
}

void sl__admin_stats(struct sl__conn *c, const struct sl__h1_req *r)
{
    struct sl__server *srv = c->w->srv;
    struct sl__qpair p[8];
    char scratch[256];
    int n = r->query.len < sizeof(scratch)
                ? sl__query_parse(r->query.p, r->query.len, p, 8, scratch, sizeof(scratch))
                : SL_ETOOBIG;
    unsigned seconds, top;
    struct sl__stats_view v;

    if (n < 0) {
        sl__admin_send_error(c, -1, r->keep_alive, 400, "expected ?seconds=1..900&top=1..100");
        return;
    }
    seconds = param(p, n, "seconds", 60, 1, SL__STATS_SECONDS);
    top = param(p, n, "top", 10, 1, 100);
    if (srv->stats == NULL) {
        memset(&v, 0, sizeof(v));
        v.seconds = 0; /* nothing kept: stats.enabled is off */
        v.now_s = sl__clock_now_ns() / SL_NS_PER_S;
        v.store_calls = v.store_failures = v.store_p50_ns = v.store_p99_ns = NULL;
        sl__admin_send_json(c, -1, r->keep_alive, 200, view_json(c, &v, 0));
        return;
    }
    sl__stats_read(srv->stats, sl__clock_now_ns(), seconds, top, &v);
    sl__admin_send_json(c, -1, r->keep_alive, 200, view_json(c, &v, v.seconds));
    sl__stats_view_free(&v);
}
