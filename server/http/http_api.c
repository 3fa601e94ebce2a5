/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_api.c - the endpoints of sluiced's HTTP API (docs/http.md), as a
 * table of (method, path, handler): the check endpoints (POST /json, POST
 * /v1/check, GET /v1/auth - its descriptor from the query, or its keys from
 * the query and its values from X-Sluice-Entry-* headers, so that no value
 * changes its shape -, POST /v1/acquire, POST /v1/release), key
 * inspection and reset (GET/DELETE /v1/keys), GET /metrics, GET /healthz,
 * GET /readyz and POST /v1/debug/clock; and the router over every room's
 * route table (http_route.h).
 *
 * Every decision goes through the one decision path (core/decide.h): the
 * handler parses, reserves a reply slot with its operation and hands the
 * request over; the callback formats the answer into the slot (at once for
 * the memory store). Kill switches, the store and the metrics are the
 * decision path's. Nothing is allocated per check: parsing uses a
 * per-thread arena, operations live in the connection's op ring, answers
 * are built in per-thread buffers. It does not frame HTTP (http1.c).
 *
 * Admin endpoints pass the gate first (http_gate.c: admin listener, bearer
 * token); the rules, configuration and kill switch endpoints are the admin
 * room's (server/admin/). A /v1/auth delay is held with a timer
 * (http_hold.c) up to http.max_delay; a longer one is a denial.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <http_parser.h>

#include "clock.h"
#include "cert_entry.h"
#include "conn.h"
#include "decide.h"
#include "envoy.h"
#include "http1.h"
#include "http_gate.h"
#include "http_hold.h"
#include "headers.h"
#include "http_json.h"
#include "http_query.h"
#include "http_route.h"
#include "metrics.h"
#include "proto.h"
#include "server.h"
#include "stores.h"
#include "verdict_edit.h"
#include "server-t.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

#define ANSWER_MAX  (64 * 1024)
#define HEADERS_MAX 4096

enum op_kind { OP_ENVOY, OP_CHECK, OP_AUTH, OP_KEYS, OP_ACQUIRE, OP_RELEASE };

/* One decision in flight, at its reply slot's index in the connection's op
 * ring. */
struct op {
    struct sl__decide_op d; /* the decision path's part */
    struct sl__conn *c;
    int64_t slot;
    enum op_kind kind;
    bool keep_alive;
};

static _Thread_local _Alignas(16) char arena_mem[64 * 1024];
static _Thread_local struct sl__json_req jreq;
static _Thread_local char answer[ANSWER_MAX];
static _Thread_local char headers[HEADERS_MAX];
static _Thread_local char qscratch[SL__H1_MAX_HEAD];
static _Thread_local struct sl_entry qentries[SL_MAX_ENTRIES];
static _Thread_local struct sl_result edited; /* a result changed before answering */
static _Thread_local struct sl__envoy_answer envoy;

static struct sl__metrics *get_metrics(struct sl__conn *c)
{
    return c->w->srv->metrics;
}

/* ------------------------------------------------------------ answers */

static void respond(struct sl__conn *c, int64_t slot, bool keep_alive, int status, const char *body,
                    size_t len)
{
    sl__h1_respond(c, slot, keep_alive, status, NULL, 0, body, len);
}

/* Envoy's /json answers an error in text/plain, as envoyproxy/ratelimit
 * does ("Bad Request"), with the reason after it. */
static void respond_plain(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                          const char *why)
{
    const char *what = status == 400   ? "Bad Request"
                       : status == 503 ? "Service Unavailable"
                                       : "Internal Server Error";
    int n = snprintf(answer, sizeof(answer), "%s: %s\n", what, why);

    respond(c, slot, keep_alive, status, answer, n > 0 ? (size_t)n : 0);
}

static void respond_error(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                          const char *why)
{
    size_t len = 0;

    if (sl__json_build_error(why, answer, sizeof(answer), &len) != SL_OK)
        len = 0;
    respond(c, slot, keep_alive, status, answer, len);
}

static int store_error_status(int err)
{
    return err == SL_EFULL ? 503 : err == SL_ETOOBIG || err == SL_EINVAL ? 400 : 500;
}

/* Append ,"lease":"TOKEN" before the closing brace of answer[0..*len). */
static int add_lease(const struct sl_result *res, size_t *len)
{
    size_t t = strlen(res->lease);

    if (*len + t + 12 > sizeof(answer))
        return SL_ETOOBIG;
    memcpy(answer + *len - 1, ",\"lease\":\"", 10);
    memcpy(answer + *len + 9, res->lease, t);
    memcpy(answer + *len + 9 + t, "\"}", 2);
    *len += t + 11;
    return SL_OK;
}

static int decision_status(const struct op *op, const struct sl_result *res)
{
    if (op->kind == OP_KEYS || res->verdict != SL_DENY)
        return 200;
    return op->kind == OP_AUTH ? 403 : 429;
}

/* The delay to hold a /v1/auth answer for, in ms (0: none); a delay above
 * http.max_delay is answered as a denial whose retry is the delay (the
 * request was admitted and counted by the limiter: verdict_edit.h). */
static int64_t auth_delay(const struct op *op, const struct sl_result **res)
{
    int64_t ms;

    if (op->kind != OP_AUTH || (*res)->verdict != SL_DELAY)
        return 0;
    ms = sl_ns_to_ms_ceil((*res)->delay_ns);
    if (ms <= op->c->w->srv->cfg.http_max_delay_ms)
        return ms;
    *res = sl__verdict_delay_as_denial(&edited, *res);
    return 0;
}

/* The decision path's callback: format the answer into the op's slot
 * (after which the connection and its op ring may be gone). */
static void on_done(struct sl__decide_op *d, int err, const struct sl_result *res)
{
    struct op *op = (struct op *)(void *)d;
    const struct sl__config *cfg = &op->c->w->srv->cfg;
    size_t len = 0, hlen = 0;
    int64_t hold_ms;
    int rc;

    if (op->kind == OP_RELEASE) {
        if (err == SL_OK)
            respond(op->c, op->slot, op->keep_alive, 200, "{\"released\":true}", 17);
        else
            respond_error(op->c, op->slot, op->keep_alive, err == SL_ENOENT ? 404 : 400,
                          err == SL_ENOENT ? "no such lease" : "malformed lease token");
        return;
    }
    if (err != SL_OK) {
        (op->kind == OP_ENVOY ? respond_plain : respond_error)(
            op->c, op->slot, op->keep_alive, store_error_status(err), sl__decide_strerror(err));
        return;
    }
    hold_ms = auth_delay(op, &res);
    if (op->kind == OP_ENVOY) {
        sl__envoy_answer(cfg, res, op->d.shadow, op->d.now_ns, &envoy);
        rc = sl__json_write_envoy(&envoy, answer, sizeof(answer), &len);
    } else {
        rc = sl__json_build_check_by(res, sl__decide_policy(&op->d), answer, sizeof(answer), &len);
    }
    if (rc == SL_OK && op->kind == OP_ACQUIRE)
        rc = add_lease(res, &len);
    if (rc == SL_OK)
        rc = sl__hdr_write(res, op->d.now_ns, cfg->http_headers, headers, sizeof(headers), &hlen);
    if (rc != SL_OK) {
        respond_error(op->c, op->slot, op->keep_alive, 500, "answer too large");
        return;
    }
    if (hold_ms > 0) {
        const struct sl__buf *b = sl__h1_build(op->keep_alive, 200, headers, hlen, answer, len);
        sl__h1_hold(op->c, op->slot, hold_ms, b->p, b->len);
        return;
    }
    sl__h1_respond(op->c, op->slot, op->keep_alive, decision_status(op, res), headers, hlen, answer,
                   len);
}

/* ------------------------------------------------------------ operations */

static struct op *op_new(struct sl__conn *c, const struct sl__h1_req *r, enum op_kind kind)
{
    int64_t slot;
    struct op *op = sl__conn_op_reserve(c, sizeof(*op), &slot);

    if (op == NULL) {
        respond_error(c, -1, r->keep_alive, 503, "too many requests in flight on this connection");
        return NULL;
    }
    memset(&op->d, 0, sizeof(op->d));
    op->d.start_ns = r->start_ns;
    op->c = c;
    op->slot = slot;
    op->kind = kind;
    op->keep_alive = r->keep_alive;
    return op;
}

/* Decide `req` as `kind` on the one decision path. */
static void run(struct sl__conn *c, const struct sl__h1_req *r, enum op_kind kind,
                struct sl_request *req, enum sl__decide_kind dkind)
{
    struct op *op = op_new(c, r, kind);

    struct sl__decided now;

    sl__cert_entries(c, req); /* client_cert_name: the server's, never the client's */
    if (op != NULL && sl__decide(c->w, &op->d, dkind, req, on_done, &now))
        on_done(&op->d, now.err, now.res);
}

typedef int (*parse_fn)(struct sl__json_req *, struct sl__json_arena *, const char *, size_t);

/* A JSON check body: parse, decide, answer. */
static void json_check(struct sl__conn *c, const struct sl__h1_req *r, parse_fn parse,
                       enum op_kind kind)
{
    struct sl__json_arena arena;

    sl__json_arena_init(&arena, arena_mem, sizeof(arena_mem));
    if (parse(&jreq, &arena, r->body.p, r->body.len) != SL_OK)
        (kind == OP_ENVOY ? respond_plain : respond_error)(c, -1, r->keep_alive, 400, jreq.error);
    else
        run(c, r, kind, &jreq.req, kind == OP_ACQUIRE ? SL__DECIDE_ACQUIRE : SL__DECIDE_CHECK);
    sl__json_req_release(&jreq);
}

static void h_json(struct sl__conn *c, const struct sl__h1_req *r)
{
    json_check(c, r, sl__json_parse_envoy, OP_ENVOY);
}

static void h_check(struct sl__conn *c, const struct sl__h1_req *r)
{
    json_check(c, r, sl__json_parse_check, OP_CHECK);
}

static void h_acquire(struct sl__conn *c, const struct sl__h1_req *r)
{
    json_check(c, r, sl__json_parse_check, OP_ACQUIRE);
}

/* ------------------------------------------------------------ /v1/auth */

#define ENTRY_HEADER     "x-sluice-entry-"
#define ENTRY_HEADER_LEN 15

static bool same_key(struct sl_str a, struct sl_str b)
{
    return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

static bool same_name(struct sl_str a, struct sl_str b)
{
    return a.len == b.len && strncasecmp(a.p, b.p, a.len) == 0;
}

/* A key an HTTP header name can carry (RFC 9110 token characters). */
static bool header_token(struct sl_str k)
{
    for (size_t i = 0; i < k.len; i++) {
        unsigned char c = (unsigned char)k.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL)))
            return false;
    }
    return k.len > 0;
}

/* entries=K1,K2,...: the descriptor's keys in order, each value from the
 * header X-Sluice-Entry-K (any case; absent: empty). The shape is the
 * caller's configuration; a client-controlled value cannot change it. A
 * header naming no listed key is refused: a client slipped it through. */
static const char *header_entries(const struct sl__h1_req *r, struct sl_str list, size_t *ne)
{
    bool found[SL_MAX_ENTRIES] = {false};
    struct sl_str name, value, suffix;
    size_t n = 0, at = 0, j;

    for (size_t i = 0; i <= list.len;) {
        size_t end = i;
        while (end < list.len && list.p[end] != ',')
            end++;
        if (n == SL_MAX_ENTRIES)
            return "entries: at most 16 keys";
        qentries[n].key = (struct sl_str){list.p + i, end - i};
        qentries[n].value = (struct sl_str){"", 0};
        if (!header_token(qentries[n].key))
            return "entries: a comma-separated list of keys that header names can carry "
                   "(letters, digits, !#$%&'*+-.^_`|~)";
        for (j = 0; j < n; j++)
            if (same_name(qentries[j].key, qentries[n].key))
                return "entries: a key is listed twice";
        n++;
        i = end + 1;
    }
    while ((at = sl__h1_header_next(r, at, &name, &value)) != 0) {
        if (name.len < ENTRY_HEADER_LEN || strncasecmp(name.p, ENTRY_HEADER, ENTRY_HEADER_LEN))
            continue;
        suffix = (struct sl_str){name.p + ENTRY_HEADER_LEN, name.len - ENTRY_HEADER_LEN};
        for (j = 0; j < n && !same_name(qentries[j].key, suffix); j++)
            ;
        if (j == n)
            return "an X-Sluice-Entry-KEY header names a key that entries= does not list";
        if (found[j])
            return "an X-Sluice-Entry-KEY header is given twice";
        found[j] = true;
        qentries[j].value = value;
    }
    *ne = n;
    return NULL;
}

/* Does the request carry an X-Sluice-Entry-* header? */
static bool has_entry_header(const struct sl__h1_req *r)
{
    struct sl_str name, value;

    for (size_t at = 0; (at = sl__h1_header_next(r, at, &name, &value)) != 0;)
        if (name.len >= ENTRY_HEADER_LEN && !strncasecmp(name.p, ENTRY_HEADER, ENTRY_HEADER_LEN))
            return true;
    return false;
}

/* The query's pairs: domain, entries= and KEY=VALUE entries (none twice). */
static const char *query_pairs(const struct sl__qpair *pairs, int n, struct sl_request *req,
                               struct sl_str *list, size_t *ne)
{
    static const struct sl_str domain = {"domain", 6}, entries = {"entries", 7};

    for (int i = 0; i < n; i++) {
        if (same_key(pairs[i].name, domain)) {
            if (req->domain.p != NULL)
                return "domain is given twice";
            req->domain = pairs[i].value;
        } else if (same_key(pairs[i].name, entries)) {
            if (list->p != NULL)
                return "entries is given twice";
            *list = pairs[i].value;
        } else {
            if (*ne == SL_MAX_ENTRIES)
                return "at most 16 descriptor entries";
            for (size_t j = 0; j < *ne; j++)
                if (same_key(qentries[j].key, pairs[i].name))
                    return "a descriptor key is given twice";
            qentries[*ne].key = pairs[i].name;
            qentries[*ne].value = pairs[i].value;
            (*ne)++;
        }
    }
    return NULL;
}

/* One descriptor: domain=D from the query, and its entries either as
 * KEY=VALUE in the query, in order, or (entries=K1,K2) from headers. A
 * name given twice is a 400: it would change the descriptor's shape. */
static int query_request(struct sl__conn *c, const struct sl__h1_req *r, struct sl_request *req,
                         struct sl_descriptor *d)
{
    struct sl__qpair pairs[SL_MAX_ENTRIES + 3];
    int n = sl__query_parse(r->query.p, r->query.len, pairs, SL_MAX_ENTRIES + 3, qscratch,
                            sizeof(qscratch));
    struct sl_str list = {NULL, 0};
    const char *why = NULL;
    size_t ne = 0;

    memset(req, 0, sizeof(*req));
    if (n < 0)
        why = n == SL_ETOOBIG ? "too many query parameters" : "malformed query string";
    else
        why = query_pairs(pairs, n, req, &list, &ne);
    if (why == NULL && list.p != NULL && ne > 0)
        why = "with entries=, every value comes from an X-Sluice-Entry-KEY header: give no "
              "KEY=VALUE in the query";
    else if (why == NULL && list.p != NULL)
        why = header_entries(r, list, &ne);
    else if (why == NULL && has_entry_header(r))
        why = "X-Sluice-Entry-KEY headers need entries=KEY,... in the query";
    if (why == NULL && (req->domain.len == 0 || ne == 0))
        why = "give domain=D and at least one KEY=VALUE in the query (or entries=KEY,...)";
    if (why != NULL) {
        respond_error(c, -1, r->keep_alive, 400, why);
        return -1;
    }
    *d = (struct sl_descriptor){qentries, ne, -1, NULL};
    req->descriptors = d;
    req->n_descriptors = 1;
    req->hits = 1;
    return 0;
}

static void query_op(struct sl__conn *c, const struct sl__h1_req *r, enum op_kind kind,
                     enum sl__decide_kind dkind)
{
    struct sl_request req;
    struct sl_descriptor d;

    if (query_request(c, r, &req, &d) == 0)
        run(c, r, kind, &req, dkind);
}

static void h_auth(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_AUTH, SL__DECIDE_CHECK);
}

static void h_keys_get(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_KEYS, SL__DECIDE_INSPECT);
}

static void h_keys_delete(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_KEYS, SL__DECIDE_RESET);
}

/* A small JSON body {"NAME": ...}: the member, or NULL with a 400 sent. */
static cJSON *admin_body(struct sl__conn *c, const struct sl__h1_req *r, const char *name,
                         cJSON **doc)
{
    const char *bad = NULL;
    cJSON *v;

    *doc = sl__json_parse_strict(r->body.p, r->body.len, &bad);
    v = *doc != NULL ? cJSON_GetObjectItemCaseSensitive(*doc, name) : NULL;
    if (v == NULL) {
        char why[80];
        if (bad != NULL)
            snprintf(why, sizeof(why), "body: %s", bad);
        else
            snprintf(why, sizeof(why), "expected a JSON object with \"%s\"", name);
        respond_error(c, -1, r->keep_alive, 400, why);
    }
    return v;
}

/* "latency_us": absent (-1), or a whole number of microseconds from 0 to
 * 10^10 (exact in a double): SL_OK, else SL_EINVAL. */
static int latency_us_of(const cJSON *doc, int64_t *us)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(doc, "latency_us");
    double d;

    *us = -1;
    if (l == NULL)
        return SL_OK;
    if (!cJSON_IsNumber(l))
        return SL_EINVAL;
    d = l->valuedouble;
    if (!(d >= 0 && d <= 1e10) || (double)(int64_t)d != d)
        return SL_EINVAL;
    *us = (int64_t)d;
    return SL_OK;
}

static void h_release(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc, *v = admin_body(c, r, "lease", &doc);
    struct sl__decided now;
    struct op *op;
    int64_t us = -1;

    if (v != NULL && !cJSON_IsString(v)) {
        respond_error(c, -1, r->keep_alive, 400, "lease must be a string");
    } else if (v != NULL && latency_us_of(doc, &us) != SL_OK) {
        respond_error(c, -1, r->keep_alive, 400,
                      "latency_us must be a whole number of microseconds from 0 to 10000000000");
    } else if (v != NULL && (op = op_new(c, r, OP_RELEASE)) != NULL) {
        if (sl__decide_release_latency(c->w, &op->d, v->valuestring, strlen(v->valuestring),
                                       us < 0 ? -1 : us * 1000, on_done, &now))
            on_done(&op->d, now.err, now.res);
    }
    cJSON_Delete(doc);
}

static void h_clock(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc, *v;
    int64_t now;
    char body[64];

    if (!sl__clock_is_test()) {
        respond_error(c, -1, r->keep_alive, 403, "the test clock needs sluiced --test-clock");
        return;
    }
    v = admin_body(c, r, "advance_ms", &doc);
    if (v != NULL) {
        double ms = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (ms < 0 || ms > 9e15 || ms != (double)(int64_t)ms ||
            sl__clock_advance_ms((int64_t)ms, &now) != SL_OK) {
            respond_error(c, -1, r->keep_alive, 400, "advance_ms must be a whole number >= 0");
        } else {
            int n =
                snprintf(body, sizeof(body), "{\"now_ms\":%lld}", (long long)(now / SL_NS_PER_MS));
            respond(c, -1, r->keep_alive, 200, body, (size_t)n);
        }
    }
    cJSON_Delete(doc);
}

/* Is `name` one of the query's parameters (with or without a value)? */
static bool query_has(const struct sl__h1_req *r, const char *name)
{
    struct sl__qpair pairs[16];
    int n = sl__query_parse(r->query.p, r->query.len, pairs, 16, qscratch, sizeof(qscratch));

    for (int i = 0; i < n; i++)
        if (pairs[i].name.len == strlen(name) &&
            memcmp(pairs[i].name.p, name, pairs[i].name.len) == 0)
            return true;
    return false;
}

/* Liveness: 200 "ok" while the process serves. With ?verbose, the same 200
 * with a JSON body: the store's state and its per-node view. */
static void h_healthz(struct sl__conn *c, const struct sl__h1_req *r)
{
    size_t len = 0;
    char *buf;

    if (!query_has(r, "verbose")) {
        respond(c, -1, r->keep_alive, 200, "ok\n", 3);
        return;
    }
    buf = sl__xrealloc(NULL, SL__STORES_HEALTH_MAX + 64); /* a probe, not the hot path */
    len = (size_t)snprintf(buf, 64, "{\"status\":\"ok\",\"rules_loaded\":%s,\"store\":",
                           sl__worker_rules(c->w) != NULL ? "true" : "false");
    if (sl__server_stores_render_health(c->w->srv, buf, SL__STORES_HEALTH_MAX + 61, &len) == 0) {
        respond_error(c, -1, r->keep_alive, 500, "health view did not fit");
    } else {
        memcpy(buf + len, "}\n", 2);
        respond(c, -1, r->keep_alive, 200, buf, len + 2);
    }
    free(buf);
}

/*
 * Readiness: 503 until rules are loaded, while the store is still starting
 * (connecting, nothing failed yet), and while checks cannot be decided (the
 * store is down and its failure policy only denies). A store that answers
 * by a local or allow policy is "degraded": 200 under http.readyz
 * decisions (the default: an outage of the shared store does not pull
 * every replica out of a load balancer at once), 503 under store.
 */
static void h_readyz(struct sl__conn *c, const struct sl__h1_req *r)
{
    const char *degraded, *why = sl__worker_unready(c->w, &degraded);
    char body[256];
    int n;

    if (why != NULL)
        n = snprintf(body, sizeof(body), "not ready: %s\n", why);
    else if (degraded[0] != '\0')
        n = snprintf(body, sizeof(body), "degraded: %s\n", degraded);
    else
        n = snprintf(body, sizeof(body), "ready\n");
    respond(c, -1, r->keep_alive, why != NULL ? 503 : 200, body,
            n > 0 && (size_t)n < sizeof(body) ? (size_t)n : strlen(body));
}

static void h_metrics(struct sl__conn *c, const struct sl__h1_req *r)
{
    struct sl__metrics *m = get_metrics(c);
    struct sl__metrics_gauges g = {0};
    size_t cap, len = 0;
    char *buf;

    if (m == NULL) {
        respond_error(c, -1, r->keep_alive, 503, "metrics unavailable");
        return;
    }
    sl__server_gauges(c->w->srv, &g);
    g.connections = -1; /* the registry's own count, kept by the core */
    cap = sl__metrics_render_bound(m) + SL__METRICS_STORE_MAX;
    buf = sl__xrealloc(NULL, cap); /* a scrape, not the hot path */
    if (sl__metrics_render(m, &g, buf, cap, &len) == SL_OK) {
        struct sl__buf out = {0};
        sl__metrics_render_store(c->w->srv, buf, cap, &len);
        sl__buf_append(&out, buf, len);
        sl__protos_render_metrics(c->w->srv, &out); /* the rooms' own lines */
        respond(c, -1, r->keep_alive, 200, out.p, out.len);
        sl__buf_free(&out);
    } else
        respond_error(c, -1, r->keep_alive, 500, "metrics did not fit");
    free(buf);
}

/* ------------------------------------------------------------ routing */

const struct sl__http_route sl__http_api_routes[] = {
    {HTTP_POST, "/json", h_json, false, false, false},
    {HTTP_POST, "/v1/check", h_check, false, false, false},
    {HTTP_GET, "/v1/auth", h_auth, false, false, false},
    {HTTP_POST, "/v1/acquire", h_acquire, false, false, false},
    {HTTP_POST, "/v1/release", h_release, false, false, false},
    {HTTP_GET, "/metrics", h_metrics, false, false, false},
    {HTTP_GET, "/healthz", h_healthz, false, false, false},
    {HTTP_GET, "/readyz", h_readyz, false, false, false},
    {HTTP_GET, "/healthcheck", h_readyz, false, false, false}, /* envoyproxy/ratelimit's name */
    {HTTP_GET, "/v1/keys", h_keys_get, false, true, false},
    {HTTP_DELETE, "/v1/keys", h_keys_delete, false, true, false},
    {HTTP_POST, "/v1/debug/clock", h_clock, false, true, false},
    {0, NULL, NULL, false, false, false},
};

static bool path_matches(const struct sl__http_route *rt, struct sl_str path)
{
    size_t n = strlen(rt->path);

    if (rt->prefix)
        return path.len >= n && memcmp(rt->path, path.p, n) == 0;
    return path.len == n && memcmp(rt->path, path.p, n) == 0;
}

void sl__http_api_dispatch(struct sl__conn *c, const struct sl__h1_req *r)
{
    bool path_known = false;

    for (size_t t = 0; sl__http_route_tables[t] != NULL; t++) {
        for (const struct sl__http_route *rt = sl__http_route_tables[t]; rt->path != NULL; rt++) {
            if (!path_matches(rt, r->path))
                continue;
            if (rt->admin && !sl__gate_listener(c))
                goto unknown; /* not served here: as unknown as any other path */
            path_known = true;
            if (rt->method == r->method ||
                (r->method == HTTP_HEAD && rt->method == HTTP_GET && rt->head)) {
                /* Checks join the read's batch (decide.h); anything else
                 * (an admin change, a held /v1/auth) lets the queued
                 * checks be decided first. */
                if (rt->fn != h_check && rt->fn != h_json)
                    sl__decide_flush(c->w);
                if (!rt->admin || sl__gate_admin(c, r))
                    rt->fn(c, r);
                return;
            }
        }
    }
unknown:
    if (r->method == HTTP_HEAD) /* an answer to HEAD has no body */
        sl__h1_respond(c, -1, r->keep_alive, path_known ? 405 : 404, NULL, 0, NULL, 0);
    else if (path_known)
        respond_error(c, -1, r->keep_alive, 405, "method not allowed on this path");
    else
        respond_error(c, -1, r->keep_alive, 404, "no such endpoint");
}
