/*
 * http_api.c - the endpoints of sluiced's HTTP API (CONTRACTS C5), as a
 * table of (method, path, handler): the check endpoints (POST /json, POST
 * /v1/check, GET /v1/auth, POST /v1/acquire, POST /v1/release), key
 * inspection and reset (GET/DELETE /v1/keys), GET /metrics, GET /healthz,
 * GET /readyz and POST /v1/debug/clock.
 *
 * Every decision goes through the worker's asynchronous store: the handler
 * reserves a reply slot, starts the operation and returns; the store's
 * callback answers into the slot (at once for the memory store). Nothing is
 * allocated per check: parsing uses a per-thread arena, operations live in
 * a per-connection ring, answers are built in per-thread buffers. It does
 * not frame HTTP (http1.c) and does not decide anything itself.
 *
 * Admin endpoints (keys, rules, config, debug clock, kill switches) pass
 * the gate first (http_gate.c: admin listener, bearer token); /v1/rules and
 * /v1/config are in http_admin.c, /v1/killswitch in http_ks.c. Kill switches
 * are applied here, before the store: "off" answers allowed undecided,
 * "shadow" answers a denial as allowed. A /v1/auth delay is held with a
 * timer (http_hold.c) up to http.max_delay; a longer one is a denial.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <http_parser.h>

#include "../store/redis.h"
#include "../store/store.h"
#include "clock.h"
#include "conn.h"
#include "http1.h"
#include "http_admin.h"
#include "http_gate.h"
#include "http_hold.h"
#include "http_headers.h"
#include "http_json.h"
#include "http_query.h"
#include "killswitch.h"
#include "metrics.h"
#include "store_stats.h"
#include "server-t.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

#define ANSWER_MAX  (64 * 1024)
#define HEADERS_MAX 4096

enum op_kind { OP_ENVOY, OP_CHECK, OP_AUTH, OP_KEYS, OP_ACQUIRE, OP_RELEASE };

/* Envoy detailed_metric: per descriptor, the limit label made of the
 * request's entries ("key_value.key2_value2"); len 0 where the rule is not
 * detailed. Allocated only for requests whose rule asks for it. */
struct labels {
    struct sl_str s[SL_MAX_DESCRIPTORS];
    char bytes[SL_MAX_DESCRIPTORS][SL__METRIC_LABEL_MAX];
};

/* One store operation in flight, at its reply slot's index in the ring. */
struct op {
    struct sl__conn *c;
    int64_t slot;
    enum op_kind kind;
    bool keep_alive;
    bool shadow;      /* kill switch: answer a denial as allowed */
    int64_t now_ns;   /* the decision's time, for X-RateLimit-Reset */
    int64_t start_ns; /* monotonic, for the latency histogram */
    uint16_t domain_len;
    struct labels *labels;             /* detailed_metric labels, or NULL (most requests) */
    char domain[SL__METRIC_LABEL_MAX]; /* metric label (truncated copy) */
};

static _Thread_local _Alignas(16) char arena_mem[64 * 1024];
static _Thread_local struct sl__json_req jreq;
static _Thread_local char answer[ANSWER_MAX];
static _Thread_local char headers[HEADERS_MAX];
static _Thread_local char qscratch[SL__H1_MAX_HEAD];
static _Thread_local struct sl_entry qentries[SL_MAX_ENTRIES];
static _Thread_local struct sl_result edited; /* a result changed before answering */

/* ------------------------------------------------------------ metrics */

static struct sl__metrics *get_metrics(struct sl__conn *c)
{
    return c->w->srv->metrics;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SL_NS_PER_S + ts.tv_nsec;
}

static void count(struct op *op, const struct sl_result *res, const struct labels *labels)
{
    struct sl__metrics *m = get_metrics(op->c);
    struct sl_str domain = {op->domain, op->domain_len};
    unsigned w = op->c->w->id;

    if (m == NULL)
        return;
    sl__metrics_result(m, w, domain, res, labels != NULL ? labels->s : NULL);
    sl__metrics_latency(m, w, mono_ns() - op->start_ns);
}

/* ------------------------------------------------------------ answers */

static void respond(struct sl__conn *c, int64_t slot, bool keep_alive, int status, const char *body,
                    size_t len)
{
    sl__h1_respond(c, slot, keep_alive, status, NULL, 0, body, len);
}

static void respond_error(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                          const char *why)
{
    size_t len = 0;

    if (sl__json_build_error(why, answer, sizeof(answer), &len) != SL_OK)
        len = 0;
    respond(c, slot, keep_alive, status, answer, len);
}

#define SL__STR_(x) #x
#define SL__STR(x)  SL__STR_(x)

static int store_error_status(int err)
{
    return err == SL_EFULL ? 503 : err == SL_ETOOBIG || err == SL_EINVAL ? 400 : 500;
}

/* What to tell a client whose check the store refused: what was wrong and,
 * where the client can fix it, how. */
static const char *store_error_message(int err)
{
    switch (err) {
    case SL_ETOOBIG:
        return "request above a cap: at most " SL__STR(
            SL_MAX_DESCRIPTORS) " descriptors of at most " SL__STR(SL_MAX_ENTRIES) " entries, each "
                                                                                   "descriptor's "
                                                                                   "domain, keys "
                                                                                   "and values "
                                                                                   "under 1 KiB";
    case SL_EFULL:
        return "the state table is full and configured to refuse new keys; retry later";
    case SL_ERANGE:
        return "a number is out of range for the store (a cost of 2^31 or more with the Redis "
               "store)";
    default:
        return sl_strerror(err);
    }
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

/* A /v1/auth delay above http.max_delay: answered as a denial whose retry
 * is the delay (the request was admitted and counted by the limiter). */
static const struct sl_result *delay_as_denial(const struct sl_result *res)
{
    edited = *res;
    edited.verdict = SL_DENY;
    for (size_t i = 0; i < edited.n_statuses; i++) {
        struct sl_decision *d = &edited.statuses[i].d;
        if (d->verdict == SL_DELAY) {
            d->verdict = SL_DENY;
            d->retry_after_ns = d->delay_ns;
        }
    }
    return &edited;
}

/* The delay to hold a /v1/auth answer for, in ms (0: none); turns a delay
 * above the configured maximum into a denial. */
static int64_t auth_delay(const struct op *op, const struct sl_result **res)
{
    int64_t ms;

    if (op->kind != OP_AUTH || (*res)->verdict != SL_DELAY)
        return 0;
    ms = sl_ns_to_ms_ceil((*res)->delay_ns);
    if (ms <= op->c->w->srv->cfg.http_max_delay_ms)
        return ms;
    *res = delay_as_denial(*res);
    return 0;
}

static void answer_op(struct op *op, int err, const struct sl_result *res,
                      const struct labels *labels);

/* The store's callback. The op's labels are taken first: answering fills
 * the reply slot, after which the connection (and its op ring) may be gone. */
static void on_done(void *arg, int err, const struct sl_result *res)
{
    struct op *op = arg;
    struct labels *labels = op->labels;

    op->labels = NULL;
    answer_op(op, err, res, labels);
    free(labels);
}

static void answer_op(struct op *op, int err, const struct sl_result *res,
                      const struct labels *labels)
{
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
        respond_error(op->c, op->slot, op->keep_alive, store_error_status(err),
                      store_error_message(err));
        return;
    }
    if (op->shadow)
        res = sl__ks_unenforce(res, &edited);
    if (op->kind != OP_KEYS)
        count(op, res, labels);
    hold_ms = auth_delay(op, &res);
    rc = op->kind == OP_ENVOY ? sl__json_build_envoy(res, answer, sizeof(answer), &len)
                              : sl__json_build_check(res, answer, sizeof(answer), &len);
    if (rc == SL_OK && op->kind == OP_ACQUIRE)
        rc = add_lease(res, &len);
    if (rc == SL_OK)
        rc = sl__hdr_write(res, op->now_ns, cfg->http_headers, headers, sizeof(headers), &hlen);
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
    struct sl__h1_state *st = c->proto_state;
    int64_t slot = sl__conn_slot_reserve(c);
    struct op *op;

    if (slot < 0) {
        respond_error(c, -1, r->keep_alive, 503, "too many requests in flight on this connection");
        return NULL;
    }
    if (st->api == NULL)
        st->api = sl__xzalloc(SL__CONN_MAX_SLOTS * sizeof(struct op));
    op = &((struct op *)st->api)[(uint64_t)slot % SL__CONN_MAX_SLOTS];
    memset(op, 0, offsetof(struct op, domain));
    op->c = c;
    op->slot = slot;
    op->kind = kind;
    op->keep_alive = r->keep_alive;
    op->start_ns = r->start_ns;
    return op;
}

/* Append s[0..n) to the label l (capacity SL__METRIC_LABEL_MAX). */
static void label_put(struct sl_str *l, char *buf, const char *s, size_t n)
{
    size_t room = SL__METRIC_LABEL_MAX - l->len;

    memcpy(buf + l->len, s, n < room ? n : room);
    l->len += n < room ? n : room;
    l->p = buf;
}

/* The detailed_metric labels of `req`, or NULL when no descriptor's rule
 * has detailed_metric (one extra rules match per descriptor, /json only).
 * The values come from the request: the metrics registry caps how many
 * distinct labels it keeps. */
static struct labels *detailed_labels(const sl_rules *rules, const struct sl_request *req)
{
    struct labels *lb = NULL;
    struct sl_match m;

    for (size_t i = 0; i < req->n_descriptors; i++) {
        const struct sl_descriptor *d = &req->descriptors[i];
        if (sl_rules_match(rules, req, i, &m) != SL_OK || m.detailed_metric == NULL)
            continue;
        if (lb == NULL)
            lb = sl__xzalloc(sizeof(*lb));
        for (size_t e = 0; e < d->n_entries; e++) {
            if (e > 0)
                label_put(&lb->s[i], lb->bytes[i], ".", 1);
            label_put(&lb->s[i], lb->bytes[i], d->entries[e].key.p, d->entries[e].key.len);
            label_put(&lb->s[i], lb->bytes[i], "_", 1);
            label_put(&lb->s[i], lb->bytes[i], d->entries[e].value.p, d->entries[e].value.len);
        }
    }
    return lb;
}

typedef int (*start_fn)(struct sl__store *, const struct sl__store_req *, sl__store_cb, void *);

/* Kill switch "off": allowed, nothing decided, no limit reported. */
static void answer_off(struct op *op, const struct sl_request *req)
{
    memset(&edited, 0, sizeof(edited));
    edited.verdict = SL_ALLOW;
    edited.n_statuses = req->n_descriptors;
    if (get_metrics(op->c) != NULL)
        sl__metrics_killswitch_off(get_metrics(op->c), op->c->w->id);
    on_done(op, SL_OK, &edited);
}

/* Decide `req` with the current rules through `start`. */
static void run(struct sl__conn *c, const struct sl__h1_req *r, enum op_kind kind,
                struct sl_request *req, start_fn start)
{
    const sl_rules *rules = sl__worker_rules(c->w);
    struct op *op = op_new(c, r, kind);

    if (op == NULL)
        return;
    req->now_ns = sl__clock_now_ns();
    op->now_ns = req->now_ns;
    op->domain_len =
        (uint16_t)(req->domain.len < sizeof(op->domain) ? req->domain.len : sizeof(op->domain));
    memcpy(op->domain, req->domain.p, op->domain_len);
    if (kind != OP_KEYS) {
        enum sl__ks_mode mode = sl__ks_mode(&c->w->srv->ks, req->domain);
        if (mode == SL__KS_OFF) {
            answer_off(op, req);
            return;
        }
        op->shadow = mode == SL__KS_SHADOW;
    }
    if (kind != OP_KEYS && !sl_rules_has_domain(rules, req->domain) && get_metrics(c) != NULL)
        sl__metrics_unknown_domain(get_metrics(c), c->w->id);
    if (kind == OP_ENVOY)
        op->labels = detailed_labels(rules, req);
    struct sl__store_req q = {req, rules, NULL, 0};
    if (start(c->w->store, &q, on_done, op) != SL_OK)
        on_done(op, SL_EINVAL, NULL);
}

typedef int (*parse_fn)(struct sl__json_req *, struct sl__json_arena *, const char *, size_t);

/* A JSON check body: parse, decide, answer. */
static void json_check(struct sl__conn *c, const struct sl__h1_req *r, parse_fn parse,
                       enum op_kind kind)
{
    struct sl__json_arena arena;

    sl__json_arena_init(&arena, arena_mem, sizeof(arena_mem));
    if (parse(&jreq, &arena, r->body.p, r->body.len) != SL_OK)
        respond_error(c, -1, r->keep_alive, 400, jreq.error);
    else
        run(c, r, kind, &jreq.req, c->w->store->ops->check);
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

/* One descriptor from the query: domain=D, then KEY=VALUE in order. */
static int query_request(struct sl__conn *c, const struct sl__h1_req *r, struct sl_request *req,
                         struct sl_descriptor *d)
{
    struct sl__qpair pairs[SL_MAX_ENTRIES + 2];
    int n = sl__query_parse(r->query.p, r->query.len, pairs, SL_MAX_ENTRIES + 2, qscratch,
                            sizeof(qscratch));
    size_t ne = 0;

    memset(req, 0, sizeof(*req));
    if (n < 0) {
        respond_error(c, -1, r->keep_alive, 400,
                      n == SL_ETOOBIG ? "too many query parameters" : "malformed query string");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (pairs[i].name.len == 6 && memcmp(pairs[i].name.p, "domain", 6) == 0) {
            req->domain = pairs[i].value;
            continue;
        }
        if (ne == SL_MAX_ENTRIES) {
            respond_error(c, -1, r->keep_alive, 400, "at most 16 descriptor entries");
            return -1;
        }
        qentries[ne].key = pairs[i].name;
        qentries[ne].value = pairs[i].value;
        ne++;
    }
    if (req->domain.len == 0 || ne == 0) {
        respond_error(c, -1, r->keep_alive, 400,
                      "give domain=D and at least one KEY=VALUE in the query");
        return -1;
    }
    *d = (struct sl_descriptor){qentries, ne, -1};
    req->descriptors = d;
    req->n_descriptors = 1;
    req->hits = 1;
    return 0;
}

static void query_op(struct sl__conn *c, const struct sl__h1_req *r, enum op_kind kind,
                     start_fn start)
{
    struct sl_request req;
    struct sl_descriptor d;

    if (query_request(c, r, &req, &d) == 0)
        run(c, r, kind, &req, start);
}

static void h_auth(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_AUTH, c->w->store->ops->check);
}

static void h_keys_get(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_KEYS, c->w->store->ops->peek);
}

static void h_keys_delete(struct sl__conn *c, const struct sl__h1_req *r)
{
    query_op(c, r, OP_KEYS, c->w->store->ops->reset);
}

/* A small admin body {"NAME": ...}: the member, or NULL with a 400 sent. */
static cJSON *admin_body(struct sl__conn *c, const struct sl__h1_req *r, const char *name,
                         cJSON **doc)
{
    cJSON *v;

    *doc = cJSON_ParseWithLength(r->body.p, r->body.len);
    v = *doc != NULL ? cJSON_GetObjectItemCaseSensitive(*doc, name) : NULL;
    if (v == NULL) {
        char why[80];
        snprintf(why, sizeof(why), "expected a JSON object with \"%s\"", name);
        respond_error(c, -1, r->keep_alive, 400, why);
    }
    return v;
}

static void h_release(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc, *v = admin_body(c, r, "lease", &doc);
    struct op *op;

    if (v != NULL && !cJSON_IsString(v)) {
        respond_error(c, -1, r->keep_alive, 400, "lease must be a string");
    } else if (v != NULL && (op = op_new(c, r, OP_RELEASE)) != NULL) {
        struct sl__store *s = c->w->store;
        if (s->ops->release(s, v->valuestring, strlen(v->valuestring), sl__clock_now_ns(), on_done,
                            op) != SL_OK)
            on_done(op, SL_EINVAL, NULL);
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

static void h_healthz(struct sl__conn *c, const struct sl__h1_req *r)
{
    respond(c, -1, r->keep_alive, 200, "ok\n", 3);
}

/* Every worker's store is ready (a Redis store's readiness may be read
 * from any thread). */
static bool stores_ready(const struct sl__server *srv)
{
    for (unsigned i = 0; i < srv->n_workers; i++) {
        const struct sl__store *st = srv->workers[i].store;
        if (sl__store_is_redis(st) && !sl__store_redis_ready(st))
            return false;
    }
    return true;
}

static void h_readyz(struct sl__conn *c, const struct sl__h1_req *r)
{
    if (!stores_ready(c->w->srv))
        respond(c, -1, r->keep_alive, 503, "store not ready\n", 16);
    else if (sl__worker_rules(c->w) != NULL)
        respond(c, -1, r->keep_alive, 200, "ready\n", 6);
    else
        respond(c, -1, r->keep_alive, 503, "no rules loaded\n", 16);
}

static void h_metrics(struct sl__conn *c, const struct sl__h1_req *r)
{
    struct sl__metrics *m = get_metrics(c);
    struct sl__metrics_gauges g = {0};
    struct sl_table_stats ts;
    size_t cap, len = 0;
    char *buf;

    if (m == NULL) {
        respond_error(c, -1, r->keep_alive, 503, "metrics unavailable");
        return;
    }
    sl_table_stats(sl_limiter_table(c->w->srv->lim), &ts);
    g.table_entries = ts.entries;
    g.table_bytes = ts.bytes;
    g.table_max_bytes = c->w->srv->cfg.store_max_bytes;
    g.table_evictions = ts.evictions;
    g.table_full_denials = ts.full_denials;
    g.reloads = atomic_load(&c->w->srv->reloads);
    g.reload_failures = atomic_load(&c->w->srv->reload_failures);
    g.connections = -1; /* the registry's own count, kept by the core */
    cap = sl__metrics_render_bound(m) + SL__METRICS_STORE_MAX;
    buf = sl__xrealloc(NULL, cap); /* a scrape, not the hot path */
    if (sl__metrics_render(m, &g, buf, cap, &len) == SL_OK) {
        sl__metrics_render_store(c->w->srv, buf, cap, &len);
        respond(c, -1, r->keep_alive, 200, buf, len);
    } else
        respond_error(c, -1, r->keep_alive, 500, "metrics did not fit");
    free(buf);
}

/* ------------------------------------------------------------ routing */

typedef void (*handler_fn)(struct sl__conn *c, const struct sl__h1_req *r);

static const struct route {
    int method;
    const char *path;
    handler_fn fn;
    bool prefix; /* path is a prefix: /v1/rules/{id} */
    bool admin;  /* behind the gate: admin listener and bearer token */
} routes[] = {
    {HTTP_POST, "/json", h_json, false, false},
    {HTTP_POST, "/v1/check", h_check, false, false},
    {HTTP_GET, "/v1/auth", h_auth, false, false},
    {HTTP_POST, "/v1/acquire", h_acquire, false, false},
    {HTTP_POST, "/v1/release", h_release, false, false},
    {HTTP_GET, "/metrics", h_metrics, false, false},
    {HTTP_GET, "/healthz", h_healthz, false, false},
    {HTTP_GET, "/readyz", h_readyz, false, false},
    {HTTP_GET, "/v1/keys", h_keys_get, false, true},
    {HTTP_DELETE, "/v1/keys", h_keys_delete, false, true},
    {HTTP_POST, "/v1/debug/clock", h_clock, false, true},
    {HTTP_GET, "/v1/config", sl__http_config, false, true},
    {HTTP_GET, "/v1/killswitch", sl__http_ks_list, false, true},
    {HTTP_PUT, "/v1/killswitch", sl__http_ks_set, false, true},
    {HTTP_GET, "/v1/rules", sl__http_rules_list, false, true},
    {HTTP_POST, "/v1/rules", sl__http_rules_add, false, true},
    {HTTP_PUT, "/v1/rules/", sl__http_rules_put, true, true},
    {HTTP_DELETE, "/v1/rules/", sl__http_rules_delete, true, true},
};

static bool path_matches(const struct route *rt, struct sl_str path)
{
    size_t n = strlen(rt->path);

    if (rt->prefix)
        return path.len >= n && memcmp(rt->path, path.p, n) == 0;
    return path.len == n && memcmp(rt->path, path.p, n) == 0;
}

void sl__http_api_dispatch(struct sl__conn *c, const struct sl__h1_req *r)
{
    bool path_known = false;

    if (r->method == HTTP_HEAD) { /* an answer to HEAD has no body */
        sl__h1_respond(c, -1, r->keep_alive, 405, NULL, 0, NULL, 0);
        return;
    }
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *rt = &routes[i];
        if (!path_matches(rt, r->path))
            continue;
        if (rt->admin && !sl__gate_listener(c))
            break; /* not served here: as unknown as any other path */
        path_known = true;
        if (rt->method == r->method) {
            if (!rt->admin || sl__gate_admin(c, r))
                rt->fn(c, r);
            return;
        }
    }
    if (path_known)
        respond_error(c, -1, r->keep_alive, 405, "method not allowed on this path");
    else
        respond_error(c, -1, r->keep_alive, 404, "no such endpoint");
}

void sl__http_api_close(struct sl__conn *c)
{
    struct sl__h1_state *st = c->proto_state;

    free(st->api);
    st->api = NULL;
}
