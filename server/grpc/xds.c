/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xds.c - the xDS rules source: one client of an aggregated discovery
 * service (envoy.service.discovery.v3.AggregatedDiscoveryService/
 * StreamAggregatedResources, state of the world) on the main thread's
 * loop, over HTTP/2 (nghttp2, client side) on a TCP connection, with TLS
 * through the same client transform as the proxy's upstreams (net/tlsc.h)
 * when rules.xds.tls is set.
 *
 * It asks for RateLimitConfig resources with the node's id. Each response
 * is rendered as rules YAML (xds_rules.c) and tried on libuv's work queue,
 * under the server's reload lock, as a whole load: the files, these
 * resources in the place of one more file, then the database. A load that
 * builds is published and ACKed (the response's version); one that does
 * not is NACKed (the last applied version, and the load's problems as the
 * error) and the serving rules stay. Every later reload (a file change,
 * SIGHUP, the admin API) includes the last applied resources.
 *
 * When the stream or the connection fails it reconnects after a backoff
 * (rules.xds.backoff, doubling up to rules.xds.max_backoff, each wait
 * drawn between half and all of it); meanwhile the rules it last applied
 * keep serving. It does not parse rules (the library does).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "conn.h"
#include "envoy/service/discovery/v3/discovery.pb-c.h"
#include "log.h"
#include "rules_load.h"
#include "server-t.h"
#include "server.h"
#include "tls_client.h"
#include "xalloc.h"
#include "xds.h"

#define ADS_PATH "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
/* Responses larger than this end the stream. */
#define MAX_MESSAGE (16u << 20)
/* The NACK's message is cut to this. */
#define MAX_ERROR 2048

/* A response waiting to be tried, and then the answer to send. */
struct attempt {
    char *version, *nonce;
    struct sl__xds_text *texts;
    size_t n;
    size_t count; /* resources in the response */
    char *error;  /* set by the work: NULL applied */
    unsigned gen; /* the connection it came on */
};

struct xds {
    struct sl__server *srv;
    const struct sl__xds_config *cfg;
    uv_timer_t timer;
    /* A NACK of the version NACKed last waits (the server sends the same
     * version again at once): between half and all of rules.xds.backoff,
     * doubled each time, up to rules.xds.max_backoff. */
    uv_timer_t nack_timer;
    bool nack_timer_closed;
    char *nack_version; /* the response version NACKed last */
    unsigned nack_streak;
    char *held_nonce, *held_error; /* the NACK waiting */
    unsigned held_gen;
    uv_getaddrinfo_t gai;
    bool gai_busy, timer_closed, stopping;
    uv_tcp_t *tcp; /* NULL: not connected */
    struct sl__tlsc *tls;
    bool handshaken;
    nghttp2_session *h2;
    int32_t stream;
    struct sl__buf out; /* gRPC frames not yet taken by nghttp2 */
    size_t out_off;
    struct sl__buf in; /* the stream's bytes not yet a whole message */
    unsigned gen;      /* counts connections */
    int64_t backoff_ms;
    unsigned failures; /* attempts failed since the last good stream */
    char grpc_message[256];
    bool in_cb;         /* inside nghttp2's receiving: no sending, no teardown */
    char lost_why[400]; /* a loss met there, handled after it */
    int grpc_status;
    /* the apply on the work queue */
    uv_work_t work;
    bool work_busy;
    struct attempt *running, *next;
    /* under mu: what loads read and operators see */
    uv_mutex_t mu;
    struct sl__xds_text *cur, *trying;
    size_t n_cur, n_trying;
    bool use_trying;
    char *version; /* last applied, NULL none */
    char *last_error;
    bool connected;
    uint64_t acks, nacks, connects, losses;
};

/* One per daemon; `the_mu` keeps it from going while a scrape (on a
 * worker) reads it. */
static struct xds *the;
static pthread_mutex_t the_mu = PTHREAD_MUTEX_INITIALIZER;

static char *dup_s(const char *s)
{
    return sl__xstrndup(s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

static void attempt_free(struct attempt *a)
{
    if (a == NULL)
        return;
    free(a->version);
    free(a->nonce);
    free(a->error);
    sl__xds_texts_free(a->texts, a->n);
    free(a);
}

/* The rules load's part (rules_load.h): the resources being tried, or the
 * last applied ones. Under the reload lock, or at start (none yet). */
static int add_rules(void *arg, sl_rules_builder *b)
{
    struct xds *x = arg;
    const struct sl__xds_text *t;
    size_t n;

    uv_mutex_lock(&x->mu);
    t = x->use_trying ? x->trying : x->cur;
    n = x->use_trying ? x->n_trying : x->n_cur;
    for (size_t i = 0; i < n; i++) {
        char origin[300];
        snprintf(origin, sizeof(origin), "xds:%.250s", t[i].name);
        sl_rules_builder_add_yaml(b, t[i].yaml, t[i].len, origin, SL_SRC_FILE);
    }
    uv_mutex_unlock(&x->mu);
    return SL_OK;
}

static void set_connected(struct xds *x, bool on)
{
    uv_mutex_lock(&x->mu);
    x->connected = on;
    uv_mutex_unlock(&x->mu);
}

/* ---- sending ---- */

static void on_written(uv_write_t *w, int status)
{
    (void)status; /* a failed write shows as a failed read */
    free(w->data);
    free(w);
}

static void write_raw(struct xds *x, const uint8_t *p, size_t n)
{
    uv_write_t *w;
    uv_buf_t b;

    if (n == 0 || x->tcp == NULL)
        return;
    w = sl__xzalloc(sizeof(*w));
    w->data = sl__xzalloc(n);
    memcpy(w->data, p, n);
    b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(w, (uv_stream_t *)x->tcp, &b, 1, on_written) != 0) {
        free(w->data);
        free(w);
    }
}

/* TLS's ciphertext waiting, to the socket. */
static void flush_tls(struct xds *x)
{
    uint8_t buf[16384];
    size_t n;

    while (x->tls != NULL && (n = sl__tlsc_take(x->tls, buf, sizeof(buf))) > 0)
        write_raw(x, buf, n);
}

static void lose(struct xds *x, const char *why);

/* Whatever nghttp2 has to send, out. */
static void flush(struct xds *x)
{
    const uint8_t *data;
    ssize_t n = 0;

    if (x->in_cb)
        return; /* recv_plain flushes after */
    while (x->h2 != NULL && (n = nghttp2_session_mem_send(x->h2, &data)) > 0) {
        if (x->tls != NULL) {
            if (sl__tlsc_write(x->tls, data, (size_t)n) != 0) {
                lose(x, "TLS write failed");
                return;
            }
            flush_tls(x);
        } else {
            write_raw(x, data, (size_t)n);
        }
    }
    if (x->h2 != NULL && n < 0)
        lose(x, nghttp2_strerror((int)n));
}

static ssize_t data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *ud)
{
    struct xds *x = ud;
    size_t avail = x->out.len - x->out_off;

    (void)s, (void)id, (void)flags, (void)src;
    if (avail == 0)
        return NGHTTP2_ERR_DEFERRED; /* the stream stays open: more requests come */
    if (avail > len)
        avail = len;
    memcpy(buf, x->out.p + x->out_off, avail);
    x->out_off += avail;
    if (x->out_off == x->out.len)
        x->out.len = x->out_off = 0;
    return (ssize_t)avail;
}

/* A DiscoveryRequest: the first (no nonce), an ACK (error NULL) or a NACK. */
static void send_request(struct xds *x, const char *version, const char *nonce, const char *error)
{
    Envoy__Service__Discovery__V3__DiscoveryRequest rq =
        ENVOY__SERVICE__DISCOVERY__V3__DISCOVERY_REQUEST__INIT;
    Envoy__Config__Core__V3__Node node = ENVOY__CONFIG__CORE__V3__NODE__INIT;
    Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
    uint8_t hdr[5];
    size_t len;
    uint8_t *p;

    if (x->h2 == NULL)
        return;
    node.id = x->cfg->node_id;
    node.cluster = x->cfg->cluster != NULL ? x->cfg->cluster : (char *)"";
    node.user_agent_name = (char *)"sluiced";
    rq.node = &node;
    rq.version_info = (char *)(version != NULL ? version : "");
    rq.type_url = (char *)SL__XDS_TYPE_URL;
    rq.response_nonce = (char *)(nonce != NULL ? nonce : "");
    if (error != NULL) {
        st.code = 3; /* INVALID_ARGUMENT */
        st.message = (char *)error;
        rq.error_detail = &st;
    }
    len = envoy__service__discovery__v3__discovery_request__get_packed_size(&rq);
    p = sl__xzalloc(len ? len : 1);
    envoy__service__discovery__v3__discovery_request__pack(&rq, p);
    hdr[0] = 0;
    hdr[1] = (uint8_t)(len >> 24);
    hdr[2] = (uint8_t)(len >> 16);
    hdr[3] = (uint8_t)(len >> 8);
    hdr[4] = (uint8_t)len;
    sl__buf_append(&x->out, hdr, 5);
    sl__buf_append(&x->out, p, len);
    free(p);
    nghttp2_session_resume_data(x->h2, x->stream);
    flush(x);
}

/* ---- answering ---- */

static void send_answer(struct xds *x, const char *nonce, const char *error)
{
    char *applied;

    uv_mutex_lock(&x->mu);
    applied = x->version != NULL ? dup_s(x->version) : NULL;
    uv_mutex_unlock(&x->mu);
    send_request(x, applied, nonce, error);
    free(applied);
}

static void on_nack_timer(uv_timer_t *t)
{
    struct xds *x = t->data;

    if (x->held_nonce != NULL && x->held_gen == x->gen && x->h2 != NULL)
        send_answer(x, x->held_nonce, x->held_error);
    free(x->held_nonce);
    free(x->held_error);
    x->held_nonce = x->held_error = NULL;
}

/* ACK (error NULL) or NACK the response `version` of `nonce`. */
static void answer(struct xds *x, const char *version, const char *nonce, const char *error)
{
    uint64_t d;

    if (error == NULL) {
        uv_timer_stop(&x->nack_timer); /* a NACK held is of an older response */
        free(x->held_nonce);
        free(x->held_error);
        x->held_nonce = x->held_error = NULL;
        x->nack_streak = 0;
        free(x->nack_version);
        x->nack_version = NULL;
        send_answer(x, nonce, NULL);
        return;
    }
    if (x->nack_version != NULL && strcmp(x->nack_version, version) == 0) {
        x->nack_streak++;
    } else {
        x->nack_streak = 0;
        free(x->nack_version);
        x->nack_version = dup_s(version);
    }
    if (x->nack_streak == 0) {
        send_answer(x, nonce, error);
        return;
    }
    d = (uint64_t)x->cfg->backoff_ms << (x->nack_streak < 16 ? x->nack_streak : 16);
    if (d > (uint64_t)x->cfg->max_backoff_ms)
        d = (uint64_t)x->cfg->max_backoff_ms;
    free(x->held_nonce);
    free(x->held_error);
    x->held_nonce = dup_s(nonce);
    x->held_error = dup_s(error);
    x->held_gen = x->gen;
    sl__dbg("xds.nack_held", "xds: version %s rejected again: NACK in %" PRIu64 "ms", version, d);
    uv_timer_start(&x->nack_timer, on_nack_timer, d / 2 + 1, 0);
}

/* ---- applying ---- */

static void start_attempt(struct xds *x);

/* On the work queue: the whole load with the response's resources. */
static void apply_work(uv_work_t *w)
{
    struct xds *x = w->data;
    struct attempt *a = x->running;
    struct sl__rules_load how = {.reload = true, .stop = &x->srv->stopping};
    sl_rules *rules = NULL;
    char *diag = NULL;
    size_t dlen = 0;
    FILE *m;
    int r;

    sl__server_reload_lock(x->srv);
    uv_mutex_lock(&x->mu);
    x->trying = a->texts;
    x->n_trying = a->n;
    x->use_trying = true;
    uv_mutex_unlock(&x->mu);
    m = open_memstream(&diag, &dlen);
    how.out = m; /* the problems, for the NACK */
    r = m != NULL ? sl__rules_load(&x->srv->cfg, &how, &rules) : SL_ENOMEM;
    if (m != NULL)
        fclose(m);
    uv_mutex_lock(&x->mu);
    x->use_trying = false;
    x->trying = NULL;
    x->n_trying = 0;
    if (r == SL_OK) {
        /* the attempt's texts become the applied ones */
        struct sl__xds_text *old = x->cur;
        size_t n_old = x->n_cur;
        x->cur = a->texts;
        x->n_cur = a->n;
        a->texts = old;
        a->n = n_old;
        free(x->version);
        x->version = dup_s(a->version);
        x->acks++;
    } else {
        x->nacks++;
    }
    uv_mutex_unlock(&x->mu);
    if (r == SL_OK) {
        sl_rules_slot_publish(x->srv->rules, rules);
        atomic_fetch_add(&x->srv->reloads, 1);
    } else if (r != SL__RULES_STOPPED) {
        atomic_fetch_add(&x->srv->reload_failures, 1);
        if (diag != NULL && dlen > 0 && diag[dlen - 1] == '\n')
            diag[--dlen] = '\0';
        a->error = dlen > 0 ? sl__xstrndup(diag, dlen < MAX_ERROR ? dlen : MAX_ERROR)
                            : dup_s(sl_strerror(r));
    } else {
        a->error = dup_s("the server is stopping");
    }
    free(diag);
    sl__server_reload_unlock(x->srv);
}

static void maybe_free(struct xds *x);

static void apply_done(uv_work_t *w, int status)
{
    struct xds *x = w->data;
    struct attempt *a = x->running;

    x->work_busy = false;
    x->running = NULL;
    if (status == 0 && !x->stopping) {
        if (a->error == NULL) {
            struct sl__log_field f[] = {SL__LOG_STR("version", a->version),
                                        SL__LOG_INT("resources", (int64_t)a->count)};
            sl__log_fields(SL__LOG_INFO, "xds.applied", f, 2,
                           "xds: version %s applied (%zu resources); ACK", a->version, a->count);
        } else {
            uv_mutex_lock(&x->mu);
            free(x->last_error);
            x->last_error = dup_s(a->error);
            uv_mutex_unlock(&x->mu);
            struct sl__log_field f[] = {SL__LOG_STR("version", a->version),
                                        SL__LOG_STR("error", a->error)};
            sl__log_fields(SL__LOG_ERROR, "xds.rejected", f, 2,
                           "xds: version %s rejected (NACK); the previous rules keep serving: %s",
                           a->version, a->error);
        }
        if (a->gen == x->gen && x->h2 != NULL)
            answer(x, a->version, a->nonce, a->error);
    }
    attempt_free(a);
    if (x->stopping) {
        attempt_free(x->next);
        x->next = NULL;
        maybe_free(x);
        return;
    }
    start_attempt(x);
}

static void start_attempt(struct xds *x)
{
    if (x->work_busy || x->next == NULL)
        return;
    x->running = x->next;
    x->next = NULL;
    x->work_busy = true;
    x->work.data = x;
    if (uv_queue_work(x->srv->loop, &x->work, apply_work, apply_done) != 0) {
        x->work_busy = false; /* not reached: the loop is alive */
        attempt_free(x->running);
        x->running = NULL;
    }
}

static void on_response(struct xds *x, const uint8_t *p, size_t n)
{
    Envoy__Service__Discovery__V3__DiscoveryResponse *rs =
        envoy__service__discovery__v3__discovery_response__unpack(NULL, n, p);
    struct attempt *a;
    char err[512];

    if (rs == NULL) {
        lose(x, "the server sent a message that is not a DiscoveryResponse");
        return;
    }
    x->failures = 0; /* a good stream: the next loss starts the backoff over */
    x->backoff_ms = x->cfg->backoff_ms;
    if (rs->type_url != NULL && rs->type_url[0] != '\0' &&
        strcmp(rs->type_url, SL__XDS_TYPE_URL) != 0) {
        sl__warn("xds.other_type", "xds: ignoring a response of type %.200s", rs->type_url);
        envoy__service__discovery__v3__discovery_response__free_unpacked(rs, NULL);
        return;
    }
    a = sl__xzalloc(sizeof(*a));
    a->version = dup_s(rs->version_info);
    a->nonce = dup_s(rs->nonce);
    a->gen = x->gen;
    a->count = rs->n_resources;
    sl__dbg("xds.response", "xds: version %s, %zu resources", a->version, rs->n_resources);
    if (sl__xds_render(rs->resources, rs->n_resources, &a->texts, &a->n, err, sizeof(err)) !=
        SL_OK) {
        uv_mutex_lock(&x->mu);
        x->nacks++;
        free(x->last_error);
        x->last_error = dup_s(err);
        uv_mutex_unlock(&x->mu);
        sl__err("xds.rejected",
                "xds: version %s rejected (NACK); the previous rules keep serving: %s", a->version,
                err);
        answer(x, a->version, a->nonce, err);
        attempt_free(a);
    } else {
        attempt_free(x->next); /* state of the world: only the latest matters */
        x->next = a;
        start_attempt(x);
    }
    envoy__service__discovery__v3__discovery_response__free_unpacked(rs, NULL);
}

/* ---- receiving ---- */

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud)
{
    struct xds *x = ud;
    size_t off = 0;

    (void)s, (void)flags;
    if (id != x->stream)
        return 0;
    sl__buf_append(&x->in, data, len);
    while (x->in.len - off >= 5) {
        const uint8_t *h = (const uint8_t *)x->in.p + off;
        uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
        if (h[0] != 0 || n > MAX_MESSAGE) {
            lose(x, h[0] != 0 ? "the server sent a compressed message" : "a message too large");
            return 0;
        }
        if (x->in.len - off < 5 + (size_t)n)
            break;
        on_response(x, h + 5, n);
        if (x->lost_why[0] != '\0')
            return 0; /* lost: the connection goes after this call */
        off += 5 + (size_t)n;
    }
    memmove(x->in.p, x->in.p + off, x->in.len - off);
    x->in.len -= off;
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    struct xds *x = ud;

    (void)s, (void)flags;
    if (f->hd.stream_id != x->stream)
        return 0;
    if (nl == 11 && memcmp(name, "grpc-status", 11) == 0)
        x->grpc_status = atoi((const char *)value); /* nghttp2 ends values with NUL */
    else if (nl == 12 && memcmp(name, "grpc-message", 12) == 0)
        snprintf(x->grpc_message, sizeof(x->grpc_message), "%.*s", (int)vl, value);
    else if (nl == 7 && memcmp(name, ":status", 7) == 0 &&
             !(vl == 3 && memcmp(value, "200", 3) == 0))
        x->grpc_status = -1;
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct xds *x = ud;

    (void)s;
    if (f->hd.type == NGHTTP2_HEADERS && f->hd.stream_id == x->stream &&
        f->headers.cat == NGHTTP2_HCAT_RESPONSE && x->grpc_status == 0) {
        char *v;
        uv_mutex_lock(&x->mu);
        x->connected = true;
        x->connects++;
        v = dup_s(x->version ? x->version : "(none)");
        uv_mutex_unlock(&x->mu);
        struct sl__log_field fl[] = {SL__LOG_STR("server", x->cfg->server),
                                     SL__LOG_STR("version", v)};
        sl__log_fields(SL__LOG_INFO, "xds.connected", fl, 2,
                       "xds: subscribed at %s as node %s (applied version: %s)", x->cfg->server,
                       x->cfg->node_id, v);
        free(v);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud)
{
    struct xds *x = ud;
    char why[400];

    (void)s;
    if (id != x->stream)
        return 0;
    if (x->grpc_status > 0)
        snprintf(why, sizeof(why), "the stream ended with gRPC status %d: %s", x->grpc_status,
                 x->grpc_message);
    else
        snprintf(why, sizeof(why), "the stream ended (%s)", nghttp2_http2_strerror(code));
    x->stream = -1;
    lose(x, why);
    return 0;
}

/* ---- the connection ---- */

static void start_connect(struct xds *x);

static void on_timer(uv_timer_t *t)
{
    start_connect(t->data);
}

static void on_tcp_closed(uv_handle_t *h)
{
    free(h);
}

static void teardown(struct xds *x)
{
    if (x->h2 != NULL) {
        nghttp2_session_del(x->h2);
        x->h2 = NULL;
    }
    sl__tlsc_free(x->tls);
    x->tls = NULL;
    x->handshaken = false;
    if (x->tcp != NULL) {
        uv_close((uv_handle_t *)x->tcp, on_tcp_closed);
        x->tcp = NULL;
    }
    x->in.len = 0;
    x->out.len = x->out_off = 0;
    x->stream = -1;
    x->gen++;
}

/* The next wait: between half and all of the backoff, which doubles. */
static uint64_t next_wait(struct xds *x)
{
    uint32_t r = 0;
    uint64_t d = (uint64_t)x->backoff_ms, w;

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        r = (uint32_t)uv_hrtime();
    w = d / 2 + (d - d / 2) * (uint64_t)r / UINT32_MAX;
    x->backoff_ms =
        x->backoff_ms * 2 > x->cfg->max_backoff_ms ? x->cfg->max_backoff_ms : x->backoff_ms * 2;
    return w > 0 ? w : 1;
}

/* The stream or connection failed (or never came up): retry later. */
static void lose(struct xds *x, const char *why)
{
    bool was;
    uint64_t wait;
    char *v;

    if (x->stopping)
        return;
    if (x->in_cb) {
        if (x->lost_why[0] == '\0')
            snprintf(x->lost_why, sizeof(x->lost_why), "%s", why);
        return;
    }
    teardown(x);
    uv_mutex_lock(&x->mu);
    was = x->connected;
    x->connected = false;
    x->losses += was;
    v = dup_s(x->version ? x->version : "(none)");
    uv_mutex_unlock(&x->mu);
    wait = next_wait(x);
    x->failures++;
    if (was || x->failures == 1) {
        struct sl__log_field f[] = {SL__LOG_STR("server", x->cfg->server),
                                    SL__LOG_STR("reason", why), SL__LOG_STR("version", v)};
        sl__log_fields(SL__LOG_WARN, "xds.lost", f, 3,
                       "xds: %s at %s: %s; the rules of version %s keep serving; reconnecting "
                       "in %" PRIu64 "ms",
                       was ? "lost the management server" : "cannot reach the management server",
                       x->cfg->server, why, v, wait);
    } else {
        sl__dbg("xds.retry", "xds: %s: %s (attempt %u); next in %" PRIu64 "ms", x->cfg->server, why,
                x->failures, wait);
    }
    free(v);
    uv_timer_start(&x->timer, on_timer, wait, 0);
}

static int start_h2(struct xds *x)
{
    nghttp2_session_callbacks *cb;
    nghttp2_data_provider dp = {.read_callback = data_read};
    const char *scheme = x->tls != NULL ? "https" : "http";
    nghttp2_nv nv[] = {
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
        NV(":method", "POST"),
        NV(":scheme", scheme),
        NV(":path", ADS_PATH),
        NV(":authority", x->cfg->server),
        NV("content-type", "application/grpc"),
        NV("te", "trailers"),
        NV("user-agent", "sluiced"),
#undef NV
    };
    int r;

    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    r = nghttp2_session_client_new(&x->h2, cb, x);
    nghttp2_session_callbacks_del(cb);
    if (r != 0)
        return -1;
    nghttp2_submit_settings(x->h2, NGHTTP2_FLAG_NONE, NULL, 0);
    x->grpc_status = 0;
    x->grpc_message[0] = '\0';
    x->stream = nghttp2_submit_request(x->h2, NULL, nv, sizeof(nv) / sizeof(nv[0]), &dp, x);
    if (x->stream < 0)
        return -1;
    {
        char *v;
        uv_mutex_lock(&x->mu);
        v = x->version ? dup_s(x->version) : NULL;
        uv_mutex_unlock(&x->mu);
        send_request(x, v, NULL, NULL); /* the applied version: nothing new is resent */
        free(v);
    }
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h, (void)hint;
    b->base = sl__xzalloc(65536);
    b->len = 65536;
}

/* Plaintext from the server, into nghttp2. */
static void recv_plain(struct xds *x, const uint8_t *p, size_t n)
{
    unsigned gen = x->gen;
    ssize_t r;

    x->in_cb = true;
    x->lost_why[0] = '\0';
    r = nghttp2_session_mem_recv(x->h2, p, n);
    x->in_cb = false;
    if (x->lost_why[0] != '\0') {
        char why[sizeof(x->lost_why)];
        memcpy(why, x->lost_why, sizeof(why));
        x->lost_why[0] = '\0';
        lose(x, why);
        return;
    }
    if (r < 0) {
        lose(x, nghttp2_strerror((int)r));
        return;
    }
    flush(x);
    if (gen == x->gen && x->h2 != NULL && !nghttp2_session_want_read(x->h2) &&
        !nghttp2_session_want_write(x->h2))
        lose(x, "the server ended the HTTP/2 session");
}

static void recv_tls(struct xds *x, const uint8_t *p, size_t n)
{
    uint8_t buf[16384];
    unsigned gen = x->gen;
    long got;

    sl__tlsc_feed(x->tls, p, n);
    if (!x->handshaken) {
        enum sl__tlsc_fail why;
        int h = sl__tlsc_handshake(x->tls, &why);
        flush_tls(x);
        if (h < 0) {
            lose(x, sl__tlsc_fail_name(why));
            return;
        }
        if (h == 0)
            return;
        x->handshaken = true;
        if (start_h2(x) != 0) {
            lose(x, "cannot start HTTP/2");
            return;
        }
    }
    while (gen == x->gen && x->tls != NULL &&
           (got = sl__tlsc_read(x->tls, buf, sizeof(buf))) != 0) {
        if (got < 0) {
            lose(x, got == -1 ? "the server closed TLS" : sl__tlsc_why(x->tls));
            return;
        }
        recv_plain(x, buf, (size_t)got);
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct xds *x = s->data;

    if (n < 0)
        lose(x, n == UV_EOF ? "the server closed the connection" : uv_strerror((int)n));
    else if (n > 0 && x->tls != NULL)
        recv_tls(x, (const uint8_t *)b->base, (size_t)n);
    else if (n > 0)
        recv_plain(x, (const uint8_t *)b->base, (size_t)n);
    free(b->base);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct xds *x = req->data;

    free(req);
    if (x->stopping || x->tcp == NULL)
        return;
    if (status < 0) {
        lose(x, uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(x->tcp, 1);
    uv_read_start((uv_stream_t *)x->tcp, on_alloc, on_read);
    if (x->cfg->tls != NULL) {
        enum sl__tlsc_fail why;
        x->tls = sl__tlsc_new(x->cfg->tls->cc, x->cfg->host, NULL);
        if (x->tls == NULL || sl__tlsc_alpn(x->tls, "h2") != 0) {
            lose(x, "cannot set up TLS");
            return;
        }
        if (sl__tlsc_handshake(x->tls, &why) < 0) {
            lose(x, sl__tlsc_fail_name(why));
            return;
        }
        flush_tls(x);
        return;
    }
    if (start_h2(x) != 0)
        lose(x, "cannot start HTTP/2");
}

static void on_resolved(uv_getaddrinfo_t *g, int status, struct addrinfo *ai)
{
    struct xds *x = g->data;
    uv_connect_t *req;
    int r;

    x->gai_busy = false;
    if (x->stopping) {
        uv_freeaddrinfo(ai);
        maybe_free(x);
        return;
    }
    if (status < 0 || ai == NULL) {
        uv_freeaddrinfo(ai);
        lose(x, status < 0 ? uv_strerror(status) : "no address");
        return;
    }
    x->tcp = sl__xzalloc(sizeof(*x->tcp));
    uv_tcp_init(x->srv->loop, x->tcp);
    x->tcp->data = x;
    req = sl__xzalloc(sizeof(*req));
    req->data = x;
    r = uv_tcp_connect(req, x->tcp, ai->ai_addr, on_connect);
    uv_freeaddrinfo(ai);
    if (r != 0) {
        free(req);
        lose(x, uv_strerror(r));
    }
}

static void start_connect(struct xds *x)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[8];

    if (x->stopping || x->gai_busy)
        return;
    snprintf(port, sizeof(port), "%u", x->cfg->port);
    x->gai.data = x;
    if (uv_getaddrinfo(x->srv->loop, &x->gai, on_resolved, x->cfg->host, port, &hints) != 0) {
        lose(x, "cannot resolve");
        return;
    }
    x->gai_busy = true;
}

int sl__xds_start(struct sl__server *srv)
{
    const struct sl__xds_config *cfg = sl__config_room(&srv->cfg, &sl__xds_config_section);
    struct xds *x;

    if (cfg == NULL || cfg->server == NULL)
        return 0;
    x = sl__xzalloc(sizeof(*x));
    x->srv = srv;
    x->cfg = cfg;
    x->stream = -1;
    x->backoff_ms = cfg->backoff_ms;
    uv_mutex_init(&x->mu);
    uv_timer_init(srv->loop, &x->timer);
    x->timer.data = x;
    uv_timer_init(srv->loop, &x->nack_timer);
    x->nack_timer.data = x;
    pthread_mutex_lock(&the_mu);
    the = x;
    pthread_mutex_unlock(&the_mu);
    sl__rules_set_extra(add_rules, x);
    sl__info("xds.starting", "xds: rules from %s (node %s, %s)", cfg->server, cfg->node_id,
             cfg->tls != NULL ? "TLS" : "plaintext HTTP/2");
    start_connect(x);
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    struct xds *x = h->data;

    if (h == (uv_handle_t *)&x->timer)
        x->timer_closed = true;
    else
        x->nack_timer_closed = true;
    maybe_free(x);
}

/* Once nothing of the loop refers to it. The rules it added stay served
 * until the process ends; later loads (none: the server is stopping)
 * would no longer see them. */
static void maybe_free(struct xds *x)
{
    if (!x->stopping || !x->timer_closed || !x->nack_timer_closed || x->work_busy || x->gai_busy)
        return;
    sl__rules_set_extra(NULL, NULL);
    pthread_mutex_lock(&the_mu);
    the = NULL;
    pthread_mutex_unlock(&the_mu);
    sl__buf_free(&x->in);
    sl__buf_free(&x->out);
    sl__xds_texts_free(x->cur, x->n_cur);
    free(x->version);
    free(x->last_error);
    free(x->nack_version);
    free(x->held_nonce);
    free(x->held_error);
    uv_mutex_destroy(&x->mu);
    free(x);
}

void sl__xds_stop(struct sl__server *srv)
{
    struct xds *x = the;

    (void)srv;
    if (x == NULL || x->stopping)
        return;
    teardown(x);
    x->stopping = true;
    set_connected(x, false);
    if (x->gai_busy)
        uv_cancel((uv_req_t *)&x->gai);
    if (x->work_busy)
        uv_cancel((uv_req_t *)&x->work);
    uv_close((uv_handle_t *)&x->timer, on_timer_closed);
    uv_close((uv_handle_t *)&x->nack_timer, on_timer_closed);
}

/* ---- for operators ---- */

void sl__xds_render_metrics(const struct sl__server *srv, struct sl__buf *out)
{
    struct xds *x;

    (void)srv;
    pthread_mutex_lock(&the_mu);
    x = the;
    if (x == NULL) {
        pthread_mutex_unlock(&the_mu);
        return;
    }
    uv_mutex_lock(&x->mu);
    sl__buf_appendf(out,
                    "# HELP sluice_xds_connected Whether the xDS rules source is subscribed to its "
                    "management server (1) or not (0).\n# TYPE sluice_xds_connected gauge\n"
                    "sluice_xds_connected %d\n",
                    x->connected ? 1 : 0);
    sl__buf_appendf(out,
                    "# HELP sluice_xds_updates_total xDS responses applied (ack) and rejected "
                    "(nack).\n# TYPE sluice_xds_updates_total counter\n"
                    "sluice_xds_updates_total{result=\"ack\"} %" PRIu64 "\n"
                    "sluice_xds_updates_total{result=\"nack\"} %" PRIu64 "\n",
                    x->acks, x->nacks);
    sl__buf_appendf(out,
                    "# HELP sluice_xds_disconnects_total Times the subscription to the management "
                    "server was lost.\n# TYPE sluice_xds_disconnects_total counter\n"
                    "sluice_xds_disconnects_total %" PRIu64 "\n",
                    x->losses);
    uv_mutex_unlock(&x->mu);
    pthread_mutex_unlock(&the_mu);
}

void sl__xds_render_stats(const struct sl__server *srv, struct sl__buf *out)
{
    struct xds *x;

    (void)srv;
    pthread_mutex_lock(&the_mu);
    x = the;
    if (x == NULL) {
        pthread_mutex_unlock(&the_mu);
        return;
    }
    uv_mutex_lock(&x->mu);
    sl__buf_append(out, "\"xds\":{\"server\":", 16);
    sl__buf_json_str(out, x->cfg->server);
    sl__buf_append(out, ",\"node_id\":", 11);
    sl__buf_json_str(out, x->cfg->node_id);
    sl__buf_appendf(out, ",\"connected\":%s,\"version\":", x->connected ? "true" : "false");
    sl__buf_json_str(out, x->version);
    sl__buf_appendf(out,
                    ",\"resources\":%zu,\"acks\":%" PRIu64 ",\"nacks\":%" PRIu64
                    ",\"connects\":%" PRIu64 ",\"last_error\":",
                    x->n_cur, x->acks, x->nacks, x->connects);
    sl__buf_json_str(out, x->last_error);
    sl__buf_append(out, "}", 1);
    uv_mutex_unlock(&x->mu);
    pthread_mutex_unlock(&the_mu);
}
