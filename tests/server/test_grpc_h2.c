/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_grpc_h2.c - the gRPC room's pure layers without a socket: the
 * protobuf codec (RateLimitRequest into the decision path's request with
 * Envoy's hits_addend rules and overrides, refusals with /json's words,
 * RateLimitResponse from an Envoy answer) and the HTTP/2 session driven by
 * an in-process nghttp2 client: calls answered with grpc-status in the
 * trailers, caps answered RESOURCE_EXHAUSTED, a header list above its cap
 * ending the session, replies waiting for a window that never opens timed
 * out on the owner's clock, and a warm session whose calls take nothing
 * from the general heap (malloc, calloc and realloc counted through the
 * linker's --wrap while the server side runs). Streams: messages handed
 * over one by one (several in a frame, one across frames), replies queued
 * and ended with trailers, a peer's reset and an oversized message told
 * to the owner (ops->gone), a stream left open freed with its session.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc_codec.h"
#include "h2.h"

/* ------------------------------------------------------------ counting the heap */

static bool counting;
static unsigned long heap_calls;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
    heap_calls += counting;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    heap_calls += counting;
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    heap_calls += counting;
    return __real_realloc(p, n);
}

/* ------------------------------------------------------------ codec */

typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor Desc;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__Entry Entry;

/* A RateLimitRequest with n descriptors of one entry each, packed. */
static size_t pack_request(const char *domain, size_t n, uint32_t hits, uint8_t *out)
{
    Envoy__Service__Ratelimit__V3__RateLimitRequest m =
        ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_REQUEST__INIT;
    static Desc d[40];
    static Desc *dp[40];
    static Entry e[40];
    static Entry *ep[40];
    static Google__Protobuf__UInt64Value h = GOOGLE__PROTOBUF__UINT64_VALUE__INIT;
    static Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__RateLimitOverride o =
        ENVOY__EXTENSIONS__COMMON__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__RATE_LIMIT_OVERRIDE__INIT;

    for (size_t i = 0; i < n; i++) {
        envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__init(&d[i]);
        envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__entry__init(&e[i]);
        e[i].key = "user";
        e[i].value = "u1";
        ep[i] = &e[i];
        d[i].n_entries = 1;
        d[i].entries = &ep[i];
        dp[i] = &d[i];
    }
    if (n >= 2) { /* the second: its own cost 0 (a peek) and a limit override */
        h.value = 0;
        d[1].hits_addend = &h;
        o.requests_per_unit = 7;
        o.unit = ENVOY__TYPE__V3__RATE_LIMIT_UNIT__MINUTE;
        d[1].limit = &o;
    }
    m.domain = (char *)domain;
    m.n_descriptors = n;
    m.descriptors = dp;
    m.hits_addend = hits;
    return envoy__service__ratelimit__v3__rate_limit_request__pack(&m, out);
}

static void test_decode_request(void **state)
{
    static struct sl__grpc_rls_req r;
    uint8_t buf[4096];
    size_t len = pack_request("api", 3, 0, buf);

    assert_int_equal(sl__grpc_rls_decode(&r, buf, len), SL_OK);
    assert_int_equal(r.req.domain.len, 3);
    assert_memory_equal(r.req.domain.p, "api", 3);
    assert_int_equal(r.req.hits, 1); /* 0 means 1 */
    assert_int_equal(r.req.n_descriptors, 3);
    assert_int_equal(r.descs[0].hits, -1); /* absent: the request's */
    assert_int_equal(r.descs[1].hits, 0);  /* its own: a peek */
    assert_true(r.overrides[1].set);
    assert_int_equal(r.overrides[1].requests_per_unit, 7);
    assert_int_equal(r.overrides[1].unit_ns, 60 * SL_NS_PER_S);
    assert_false(r.overrides[0].set);
    assert_memory_equal(r.descs[2].entries[0].value.p, "u1", 2);
    sl__grpc_rls_release(&r);

    len = pack_request("api", 1, 9, buf);
    assert_int_equal(sl__grpc_rls_decode(&r, buf, len), SL_OK);
    assert_int_equal(r.req.hits, 9);
    sl__grpc_rls_release(&r);
}

static void test_decode_refusals(void **state)
{
    static struct sl__grpc_rls_req r;
    uint8_t buf[8192];
    size_t len;

    len = pack_request("api", 33, 0, buf);
    assert_int_equal(sl__grpc_rls_decode(&r, buf, len), SL_ETOOBIG);
    assert_string_equal(r.error, "descriptors: too many (at most 32)");
    sl__grpc_rls_release(&r);
    len = pack_request("", 1, 0, buf);
    assert_int_equal(sl__grpc_rls_decode(&r, buf, len), SL_EINVAL);
    assert_string_equal(r.error, "domain: must not be empty");
    sl__grpc_rls_release(&r);
    len = pack_request("api", 0, 0, buf);
    assert_int_equal(sl__grpc_rls_decode(&r, buf, len), SL_EINVAL);
    assert_string_equal(r.error, "descriptors: must not be empty");
    sl__grpc_rls_release(&r);
    assert_int_equal(sl__grpc_rls_decode(&r, (const uint8_t *)"\x0a\xff\x01", 3), SL_EPARSE);
    sl__grpc_rls_release(&r);
}

static void test_encode_answer(void **state)
{
    struct sl__envoy_answer a = {.overall = SL__ENVOY_OVER_LIMIT, .n = 2};
    Envoy__Service__Ratelimit__V3__RateLimitResponse *m;
    uint8_t buf[1024];
    size_t len = 0;

    a.st[0] = (struct sl__envoy_status){SL__ENVOY_OK, false, NULL, 0, 0, 0, 0};
    a.st[1] = (struct sl__envoy_status){SL__ENVOY_OVER_LIMIT, true, "api.user", 3, 2, 0, 42};
    assert_int_equal(sl__grpc_rls_encode(&a, buf, sizeof(buf), &len), SL_OK);
    m = envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, len, buf);
    assert_non_null(m);
    assert_int_equal(m->overall_code, 2);
    assert_int_equal(m->n_statuses, 2);
    assert_null(m->statuses[0]->current_limit);
    assert_string_equal(m->statuses[1]->current_limit->name, "api.user");
    assert_int_equal(m->statuses[1]->current_limit->requests_per_unit, 3);
    assert_int_equal(m->statuses[1]->current_limit->unit, 2);
    assert_int_equal(m->statuses[1]->duration_until_reset->seconds, 42);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(m, NULL);
    assert_int_equal(sl__grpc_rls_encode(&a, buf, 8, &len), SL_ETOOBIG);
}

/* ------------------------------------------------------------ HTTP/2 */

struct pair {
    struct sl__h2 *server;
    nghttp2_session *client;
    uint8_t to_server[1 << 18];
    size_t to_server_len;
    int grpc_status[1024]; /* by stream id / 2, -1 until the trailers */
    size_t answers;
    size_t data_bytes;
    int64_t held, peak, limit; /* the message buffers' budget (budget_ops) */
    unsigned refused;
    int goaway_error; /* -1 until the client receives GOAWAY */
    int32_t goaway_last;
};

static struct sl__grpc_rls_req call_req;
static uint8_t answer[1024];

static void on_send(void *owner, const uint8_t *buf, size_t len)
{
    struct pair *p = owner;
    assert_int_equal(nghttp2_session_mem_recv(p->client, buf, len), (ssize_t)len);
}

/* The server's owner: decode the request and answer a fixed decision. */
static void on_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *c)
{
    struct pair *p = owner;
    struct sl__envoy_answer a = {.overall = SL__ENVOY_OK, .n = 1};
    size_t len;

    assert_int_equal(sl__grpc_rls_decode(&call_req, c->msg, c->len), SL_OK);
    a.st[0] = (struct sl__envoy_status){SL__ENVOY_OK, true, "api.user", 3, 2, 2, 60};
    assert_int_equal(sl__grpc_rls_encode(&a, answer, sizeof(answer), &len), SL_OK);
    sl__grpc_rls_release(&call_req);
    sl__h2_reply(p->server, s, answer, len);
    sl__h2_release(p->server, s);
}

static const struct sl__h2_ops ops = {.send = on_send, .call = on_call};

/* An owner that refuses every call it is handed, and keeps the message
 * buffers' budget as a connection does: growth past `limit` refused. */
static void on_call_refuse(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *c)
{
    struct pair *p = owner;

    sl__h2_fail(p->server, s, SL__GRPC_INVALID_ARGUMENT, "refused by the test");
    sl__h2_release(p->server, s);
}

static bool on_budget(void *owner, int64_t delta, bool refusable)
{
    struct pair *p = owner;

    if (refusable && delta > 0 && p->held + delta > p->limit) {
        p->refused++;
        return false;
    }
    p->held += delta;
    assert_true(p->held >= 0);
    if (p->held > p->peak)
        p->peak = p->held;
    return true;
}

static const struct sl__h2_ops budget_ops = {
    .send = on_send, .call = on_call_refuse, .budget = on_budget};

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    struct pair *p = ud;
    if (nl == 11 && memcmp(name, "grpc-status", 11) == 0)
        p->grpc_status[f->hd.stream_id / 2] = atoi((const char *)value);
    return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                   void *ud)
{
    ((struct pair *)ud)->data_bytes += len;
    return 0;
}

static int on_frame(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct pair *p = ud;

    if (f->hd.type == NGHTTP2_GOAWAY) {
        p->goaway_error = (int)f->goaway.error_code;
        p->goaway_last = f->goaway.last_stream_id;
    }
    return 0;
}

static int on_close(nghttp2_session *ng, int32_t id, uint32_t err, void *ud)
{
    ((struct pair *)ud)->answers++;
    return 0;
}

static struct pair *pair_new_ops(size_t max_message, const struct sl__h2_ops *o)
{
    struct pair *p = calloc(1, sizeof(*p));
    struct sl__h2_limits lim = {100, max_message, 16384, 0}; /* 0: no per-second bound */
    nghttp2_session_callbacks *cb;

    memset(p->grpc_status, -1, sizeof(p->grpc_status));
    p->goaway_error = -1;
    p->server = sl__h2_new(&lim, o, p);
    assert_non_null(p->server);
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    assert_int_equal(nghttp2_session_client_new(&p->client, cb, p), 0);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(p->client, NGHTTP2_FLAG_NONE, NULL, 0);
    return p;
}

static struct pair *pair_new(size_t max_message)
{
    return pair_new_ops(max_message, &ops);
}

static void pair_free(struct pair *p)
{
    nghttp2_session_del(p->client);
    sl__h2_free(p->server);
    free(p);
}

/* What the client has to say to the server, and the server's answer to
 * the client (whose own answers wait for the next round): whether
 * anything moved. */
static bool round_trip(struct pair *p)
{
    const uint8_t *data;
    ssize_t n;
    bool moved = false;

    while ((n = nghttp2_session_mem_send(p->client, &data)) > 0) {
        assert_true(p->to_server_len + (size_t)n <= sizeof(p->to_server));
        memcpy(p->to_server + p->to_server_len, data, (size_t)n);
        p->to_server_len += (size_t)n;
        moved = true;
    }
    counting = true;
    size_t used = sl__h2_feed(p->server, p->to_server, p->to_server_len);
    sl__h2_flush(p->server);
    counting = false;
    memmove(p->to_server, p->to_server + used, p->to_server_len - used);
    p->to_server_len -= used;
    return moved || used > 0;
}

/* Move bytes both ways until neither side has anything to say. */
static void exchange(struct pair *p)
{
    while (round_trip(p))
        ;
}

static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *fl,
                         nghttp2_data_source *src, void *ud)
{
    struct sl_str *b = src->ptr;
    size_t n = b->len < len ? b->len : len;

    memcpy(buf, b->p, n);
    b->p += n;
    b->len -= n;
    if (b->len == 0)
        *fl |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, 0                            \
    }

/* Submit one call whose framed message is body[0..len). */
static void submit(struct pair *p, struct sl_str *body)
{
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"),
                       NV(":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"),
                       NV(":authority", "t"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source.ptr = body, .read_callback = read_body};

    assert_true(nghttp2_submit_request(p->client, NULL, nv, 5, &prd, NULL) > 0);
}

static size_t framed_request(uint8_t *out)
{
    size_t len = pack_request("api", 1, 0, out + 5);

    out[0] = 0;
    out[1] = out[2] = 0;
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
    return len + 5;
}

static void test_warm_session_allocates_nothing(void **state)
{
    struct pair *p = pair_new(65536);
    static uint8_t msg[256];
    static struct sl_str bodies[400];
    size_t len = framed_request(msg);
    unsigned long before;
    uint64_t pool_before;

    for (size_t i = 0; i < 400; i++) {
        bodies[i] = (struct sl_str){(const char *)msg, len};
        submit(p, &bodies[i]);
        if (i % 50 == 49)
            exchange(p); /* 50 calls in flight at a time */
        if (i == 199) {  /* warm: every pool and buffer at its working size */
            before = heap_calls;
            pool_before = sl__h2_heap_allocs(p->server);
        }
    }
    exchange(p);
    assert_int_equal(p->answers, 400);
    for (int sid = 1; sid < 800; sid += 2)
        assert_int_equal(p->grpc_status[sid / 2], 0);
    assert_int_equal(heap_calls - before, 0);
    assert_int_equal(sl__h2_heap_allocs(p->server), pool_before);
    pair_free(p);
}

static void test_message_above_cap(void **state)
{
    struct pair *p = pair_new(16);
    static uint8_t msg[256];
    struct sl_str body = {(const char *)msg, framed_request(msg)};

    submit(p, &body);
    exchange(p);
    assert_int_equal(p->grpc_status[0], 8); /* RESOURCE_EXHAUSTED */
    assert_int_equal(p->data_bytes, 0);
    pair_free(p);
}

/* A call's message buffer draws on the owner's budget: a large message
 * is taken while the budget allows and its buffer given back after the
 * call; past the budget the call is answered RESOURCE_EXHAUSTED, nothing
 * more is counted, and the session goes on. */
static void test_message_buffers_within_budget(void **state)
{
    struct pair *p = pair_new_ops(200000, &budget_ops);
    static uint8_t big[5 + 100000], small[256];
    struct sl_str b1 = {(const char *)big, sizeof(big)}, b2 = b1;
    struct sl_str b3 = {(const char *)small, framed_request(small)};
    big[3] = (uint8_t)(100000 >> 8); /* prefix: uncompressed, 100,000 bytes */
    big[2] = (uint8_t)(100000 >> 16);
    big[4] = (uint8_t)100000;
    p->limit = 1 << 20;
    submit(p, &b1);
    exchange(p);
    assert_int_equal(p->grpc_status[0], SL__GRPC_INVALID_ARGUMENT); /* the call was made */
    assert_true(p->peak >= (int64_t)sizeof(big));
    assert_true(p->held < 65536); /* the large buffer went back with its stream */
    assert_int_equal(p->refused, 0);

    p->limit = p->held + 4096;
    submit(p, &b2);
    exchange(p);
    assert_int_equal(p->grpc_status[1], SL__GRPC_RESOURCE_EXHAUSTED);
    assert_true(p->refused >= 1);
    assert_true(p->held <= p->limit + SL__H2_SMALL_MESSAGE); /* small ones always pass */

    submit(p, &b3); /* a small call still passes */
    exchange(p);
    assert_int_equal(p->grpc_status[2], SL__GRPC_INVALID_ARGUMENT);
    assert_true(p->held <= p->limit + SL__H2_SMALL_MESSAGE);
    pair_free(p);
}

/* A header list above the cap ends the session (GOAWAY ENHANCE_YOUR_CALM)
 * without an answer on its stream, and nothing more is read. */
static void test_header_list_above_cap(void **state)
{
    struct pair *p = pair_new(65536);
    static uint8_t msg[256];
    static char pad[20000];
    struct sl_str body = {(const char *)msg, framed_request(msg)};
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", "/x"),
                       NV(":authority", "t"), NV("x-pad", "")};

    memset(pad, 'v', sizeof(pad));
    nv[4].value = (uint8_t *)pad;
    nv[4].valuelen = sizeof(pad);
    assert_int_equal(nghttp2_submit_request(p->client, NULL, nv, 5, NULL, NULL), 1);
    exchange(p);
    assert_int_equal(p->goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_int_equal(p->goaway_last, 0);
    assert_int_equal(p->grpc_status[0], -1); /* not answered */
    assert_true(sl__h2_done(p->server));
    submit(p, &body); /* read no more */
    exchange(p);
    assert_int_equal(p->grpc_status[1], -1);
    pair_free(p);
}

/* A client that grants no window: the reply waits, stamped on the owner's
 * clock; progress restamps it; write_timeout without progress ends the
 * session with GOAWAY ENHANCE_YOUR_CALM. */
static void test_reply_waiting_for_window(void **state)
{
    struct pair *p = pair_new(65536);
    static uint8_t msg[256];
    struct sl_str body = {(const char *)msg, framed_request(msg)};
    nghttp2_settings_entry zero = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0};

    nghttp2_submit_settings(p->client, NGHTTP2_FLAG_NONE, &zero, 1);
    exchange(p); /* acknowledged: the client's streams start with no window */
    submit(p, &body);
    exchange(p);
    assert_true(sl__h2_waiting(p->server));
    assert_int_equal(p->data_bytes, 0);
    assert_int_equal(sl__h2_stalled_until(p->server, 100, 1000), 1100);
    assert_int_equal(sl__h2_stalled_until(p->server, 900, 1000), 1100); /* no progress */
    nghttp2_submit_window_update(p->client, NGHTTP2_FLAG_NONE, 1, 10);
    round_trip(p); /* (not the client's window update for what it received) */
    assert_int_equal(p->data_bytes, 10);
    assert_int_equal(sl__h2_stalled_until(p->server, 1000, 1000), 2000); /* progress */
    assert_int_equal(sl__h2_stalled_until(p->server, 1999, 1000), 2000);
    assert_false(sl__h2_done(p->server));
    assert_int_equal(sl__h2_stalled_until(p->server, 2000, 1000), 2000); /* its time */
    sl__h2_flush(p->server);
    assert_int_equal(p->goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_true(sl__h2_done(p->server));
    assert_int_equal(sl__h2_stalled_until(p->server, 3000, 1000), -1);
    pair_free(p);

    p = pair_new(65536); /* a client that reads: nothing waits */
    body = (struct sl_str){(const char *)msg, framed_request(msg)};
    submit(p, &body);
    exchange(p);
    assert_int_equal(p->grpc_status[0], 0);
    assert_false(sl__h2_waiting(p->server));
    assert_int_equal(sl__h2_stalled_until(p->server, 100, 1000), -1);
    pair_free(p);
}

/* ------------------------------------------------------------ streams */

#define ECHO "/t.Echo/Chat"

static struct {
    unsigned calls, messages, half_closes, gones;
    size_t bytes;
    struct sl__h2_stream *open;
} echo;

static int32_t echo_route(void *owner, struct sl_str path)
{
    return path.len == strlen(ECHO) && memcmp(path.p, ECHO, path.len) == 0 ? SL__H2_ROUTE_STREAM
                                                                           : 0;
}

static void echo_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *c)
{
    assert_true(c->stream);
    assert_null(c->msg);
    echo.calls++;
    echo.open = s;
}

/* Every message is sent back; the half-close ends the stream OK. */
static void echo_message(void *owner, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    struct pair *p = owner;

    if (msg == NULL) {
        echo.half_closes++;
        sl__h2_fail(p->server, s, SL__GRPC_OK, "");
        sl__h2_release(p->server, s);
        echo.open = NULL;
        return;
    }
    echo.messages++;
    echo.bytes += len;
    assert_true(sl__h2_send(p->server, s, msg, len));
}

static void echo_gone(void *owner, struct sl__h2_stream *s)
{
    struct pair *p = owner;

    echo.gones++;
    echo.open = NULL;
    sl__h2_release(p->server, s);
}

static const struct sl__h2_ops echo_ops = {.send = on_send,
                                           .call = echo_call,
                                           .route = echo_route,
                                           .message = echo_message,
                                           .gone = echo_gone};

/* A client's request body that stays open (DEFERRED) until `end`. */
struct client_body {
    uint8_t buf[65536];
    size_t len, off;
    bool end;
};

static ssize_t read_client(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *fl,
                           nghttp2_data_source *src, void *ud)
{
    struct client_body *b = src->ptr;
    size_t n = b->len - b->off < len ? b->len - b->off : len;

    if (n == 0 && !b->end)
        return NGHTTP2_ERR_DEFERRED;
    memcpy(buf, b->buf + b->off, n);
    b->off += n;
    if (b->off == b->len && b->end)
        *fl |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void add_message(struct client_body *b, size_t len, uint8_t fill)
{
    b->buf[b->len] = 0;
    b->buf[b->len + 1] = (uint8_t)(len >> 24);
    b->buf[b->len + 2] = (uint8_t)(len >> 16);
    b->buf[b->len + 3] = (uint8_t)(len >> 8);
    b->buf[b->len + 4] = (uint8_t)len;
    memset(b->buf + b->len + 5, fill, len);
    b->len += 5 + len;
}

static int32_t open_stream(struct pair *p, struct client_body *b)
{
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", ECHO),
                       NV(":authority", "t"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source.ptr = b, .read_callback = read_client};
    int32_t id = nghttp2_submit_request(p->client, NULL, nv, 5, &prd, NULL);

    assert_true(id > 0);
    return id;
}

static void test_stream_messages_one_by_one(void **state)
{
    struct pair *p = pair_new_ops(65536, &echo_ops);
    static struct client_body b;
    int32_t id;

    memset(&echo, 0, sizeof(echo));
    b = (struct client_body){.len = 0};
    id = open_stream(p, &b);
    exchange(p);
    assert_int_equal(echo.calls, 1); /* handed over at its headers */
    assert_int_equal(echo.messages, 0);
    add_message(&b, 3, 'a');
    add_message(&b, 0, 0);       /* an all-default message is a message */
    add_message(&b, 20000, 'b'); /* across DATA frames (16 KiB each) */
    nghttp2_session_resume_data(p->client, id);
    exchange(p);
    assert_int_equal(echo.messages, 3);
    assert_int_equal(echo.bytes, 20003);
    assert_int_equal(p->data_bytes, 15 + 20003);  /* echoed, each framed */
    assert_int_equal(p->grpc_status[id / 2], -1); /* not over yet */
    b.end = true;
    nghttp2_session_resume_data(p->client, id);
    exchange(p);
    assert_int_equal(echo.half_closes, 1);
    assert_int_equal(p->grpc_status[id / 2], 0);
    assert_int_equal(p->answers, 1);
    assert_int_equal(echo.gones, 0);
    pair_free(p);
}

static void test_stream_reset_by_peer(void **state)
{
    struct pair *p = pair_new_ops(65536, &echo_ops);
    static struct client_body b;
    int32_t id;

    memset(&echo, 0, sizeof(echo));
    b = (struct client_body){.len = 0};
    id = open_stream(p, &b);
    exchange(p);
    assert_non_null(echo.open);
    nghttp2_submit_rst_stream(p->client, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    exchange(p);
    assert_int_equal(echo.gones, 1);
    assert_null(echo.open);
    /* the session goes on: another stream works */
    b = (struct client_body){.len = 0, .end = true};
    add_message(&b, 5, 'c');
    id = open_stream(p, &b);
    exchange(p);
    assert_int_equal(echo.messages, 1);
    assert_int_equal(p->grpc_status[id / 2], 0);
    pair_free(p);
}

static void test_stream_message_above_cap(void **state)
{
    struct pair *p = pair_new_ops(16, &echo_ops);
    static struct client_body b;
    int32_t id;

    memset(&echo, 0, sizeof(echo));
    b = (struct client_body){.len = 0};
    add_message(&b, 4, 'a');
    add_message(&b, 100, 'b');
    id = open_stream(p, &b);
    exchange(p);
    assert_int_equal(echo.messages, 1);
    assert_int_equal(p->grpc_status[id / 2], 8); /* RESOURCE_EXHAUSTED, after the echo */
    assert_int_equal(p->data_bytes, 9);
    assert_int_equal(echo.gones, 1);
    pair_free(p);
}

/* A peer that grants no window: the stream's queue stops at its bound. */
static void test_stream_queue_bounded(void **state)
{
    struct pair *p = pair_new_ops(65536, &echo_ops);
    static struct client_body b;
    static uint8_t big[60000];
    nghttp2_settings_entry zero = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0};
    size_t queued = 0;

    memset(&echo, 0, sizeof(echo));
    nghttp2_submit_settings(p->client, NGHTTP2_FLAG_NONE, &zero, 1);
    exchange(p);
    b = (struct client_body){.len = 0};
    open_stream(p, &b);
    exchange(p);
    assert_non_null(echo.open);
    while (sl__h2_send(p->server, echo.open, big, sizeof(big)))
        queued += 5 + sizeof(big);
    assert_true(queued <= SL__H2_STREAM_QUEUE);
    assert_true(queued + 5 + sizeof(big) > SL__H2_STREAM_QUEUE);
    assert_true(sl__h2_waiting(p->server));
    sl__h2_fail(p->server, echo.open, SL__GRPC_RESOURCE_EXHAUSTED, "not read");
    sl__h2_release(p->server, echo.open);
    pair_free(p);
}

static void test_stream_left_open(void **state)
{
    struct pair *p = pair_new_ops(65536, &echo_ops);
    static struct client_body b;

    memset(&echo, 0, sizeof(echo));
    b = (struct client_body){.len = 0};
    add_message(&b, 7, 'a');
    open_stream(p, &b);
    exchange(p);
    assert_int_equal(echo.messages, 1);
    assert_non_null(echo.open);
    pair_free(p); /* the stream goes with the session (the sanitizers see no leak) */
    assert_int_equal(echo.gones, 0);
}

/* ------------------------------------------------------------ raw frames */

/* A session fed frames written by hand, its output parsed here: for what
 * a conforming client never sends. */
struct raw {
    struct pair p;        /* (its client unused: p.server and the owner) */
    uint8_t out[1 << 18]; /* what the server sent */
    size_t out_len;
    nghttp2_hd_inflater *inf; /* the client's side of the server's HPACK */
    int goaway_error;         /* -1 none */
    int32_t goaway_last;
    int rst[256];     /* RST_STREAM error by stream id / 2, -1 none */
    int status[256];  /* grpc-status by stream id / 2, -1 none */
    int http[256];    /* :status by stream id / 2, -1 none */
    size_t data[256]; /* DATA payload bytes by stream id / 2 */
    unsigned settings_acks, pings, window_updates;
    uint8_t ping[8];
};

static void raw_send(void *owner, const uint8_t *buf, size_t len)
{
    struct raw *r = owner;

    assert_true(r->out_len + len <= sizeof(r->out));
    memcpy(r->out + r->out_len, buf, len);
    r->out_len += len;
}

static const struct sl__h2_ops raw_ops = {.send = raw_send, .call = on_call};

static struct raw *raw_new(void)
{
    struct raw *r = calloc(1, sizeof(*r));
    struct sl__h2_limits lim = {100, 65536, 16384, 0};

    r->p.server = sl__h2_new(&lim, &raw_ops, r);
    assert_non_null(r->p.server);
    assert_int_equal(nghttp2_hd_inflate_new(&r->inf), 0);
    return r;
}

static void raw_free(struct raw *r)
{
    nghttp2_hd_inflate_del(r->inf);
    sl__h2_free(r->p.server);
    free(r);
}

/* Parse what the server sent since the last look. */
static void raw_parse(struct raw *r)
{
    size_t off = 0;

    memset(r->rst, -1, sizeof(r->rst));
    memset(r->status, -1, sizeof(r->status));
    memset(r->http, -1, sizeof(r->http));
    memset(r->data, 0, sizeof(r->data));
    r->goaway_error = -1;
    r->settings_acks = r->pings = r->window_updates = 0;
    while (off + 9 <= r->out_len) {
        const uint8_t *f = r->out + off;
        size_t len = (size_t)f[0] << 16 | f[1] << 8 | f[2];
        int32_t id = (int32_t)((uint32_t)f[5] << 24 | f[6] << 16 | f[7] << 8 | f[8]);
        const uint8_t *pl = f + 9;

        assert_true(off + 9 + len <= r->out_len);
        assert_true(id / 2 < 256);
        switch (f[3]) {
        case 0:
            r->data[id / 2] += len;
            break;
        case 1: {
            size_t in = len;
            for (;;) {
                nghttp2_nv nv;
                int fl = 0;
                ssize_t rv = nghttp2_hd_inflate_hd2(r->inf, &nv, &fl, pl, in, 1);
                assert_true(rv >= 0);
                pl += rv;
                in -= (size_t)rv;
                if (fl & NGHTTP2_HD_INFLATE_EMIT) {
                    if (nv.namelen == 11 && memcmp(nv.name, "grpc-status", 11) == 0)
                        r->status[id / 2] = atoi((const char *)nv.value);
                    if (nv.namelen == 7 && memcmp(nv.name, ":status", 7) == 0)
                        r->http[id / 2] = atoi((const char *)nv.value);
                }
                if (fl & NGHTTP2_HD_INFLATE_FINAL) {
                    nghttp2_hd_inflate_end_headers(r->inf);
                    break;
                }
                if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && in == 0)
                    break;
            }
            break;
        }
        case 3:
            r->rst[id / 2] = (int)pl[3];
            break;
        case 4:
            r->settings_acks += f[4] & 1;
            break;
        case 6:
            r->pings++;
            memcpy(r->ping, pl, 8);
            break;
        case 7:
            r->goaway_last = (int32_t)((uint32_t)pl[0] << 24 | pl[1] << 16 | pl[2] << 8 | pl[3]);
            r->goaway_error = (int)pl[7];
            break;
        case 8:
            r->window_updates++;
            break;
        }
        off += 9 + len;
    }
}

/* Feed bytes[0..len) (all of it consumed) and flush; the output parsed. */
static void raw_feed(struct raw *r, const uint8_t *bytes, size_t len)
{
    assert_int_equal(sl__h2_feed(r->p.server, bytes, len), len);
    sl__h2_flush(r->p.server);
    raw_parse(r);
}

/* One frame at p: its length. */
static size_t fr(uint8_t *p, uint8_t type, uint8_t flags, uint32_t id, const void *payload,
                 size_t len)
{
    p[0] = (uint8_t)(len >> 16);
    p[1] = (uint8_t)(len >> 8);
    p[2] = (uint8_t)len;
    p[3] = type;
    p[4] = flags;
    p[5] = (uint8_t)(id >> 24);
    p[6] = (uint8_t)(id >> 16);
    p[7] = (uint8_t)(id >> 8);
    p[8] = (uint8_t)id;
    if (len > 0)
        memcpy(p + 9, payload, len);
    return 9 + len;
}

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

/* The preface and an empty SETTINGS. */
static size_t hello(uint8_t *p)
{
    memcpy(p, PREFACE, 24);
    return 24 + fr(p + 24, 4, 0, 0, NULL, 0);
}

/* A request's header block (static references and literals, no Huffman)
 * with `extra` (already encoded) after its fields. */
static size_t request_block(uint8_t *p, const char *extra, size_t extra_len)
{
    static const char path[] = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
    size_t n = 0;

    p[n++] = 0x83; /* :method POST */
    p[n++] = 0x86; /* :scheme http */
    p[n++] = 0x04; /* :path, a literal */
    p[n++] = sizeof(path) - 1;
    memcpy(p + n, path, sizeof(path) - 1);
    n += sizeof(path) - 1;
    p[n++] = 0x01; /* :authority t */
    p[n++] = 1;
    p[n++] = 't';
    p[n++] = 0x0f; /* content-type application/grpc */
    p[n++] = 0x10;
    p[n++] = 16;
    memcpy(p + n, "application/grpc", 16);
    n += 16;
    memcpy(p + n, extra, extra_len);
    return n + extra_len;
}

/* A whole unary call on `id`: HEADERS and one DATA with END_STREAM. */
static size_t raw_call(uint8_t *p, uint32_t id)
{
    uint8_t block[256], msg[256];
    size_t bn = request_block(block, "", 0), mn = framed_request(msg);
    size_t n = fr(p, 1, 0x4, id, block, bn);

    return n + fr(p + n, 0, 0x1, id, msg, mn);
}

/* A connection error: the session ends with GOAWAY `error`. */
static void expect_goaway_at(const uint8_t *bytes, size_t len, int error, int32_t last, int line)
{
    struct raw *r = raw_new();

    raw_feed(r, bytes, len);
    if (r->goaway_error != error || r->goaway_last != last)
        print_error("case at line %d: GOAWAY %d, last %d\n", line, r->goaway_error,
                    (int)r->goaway_last);
    assert_int_equal(r->goaway_error, error);
    assert_int_equal(r->goaway_last, last);
    assert_true(sl__h2_done(r->p.server));
    raw_free(r);
}

#define expect_goaway(b, n, e, l) expect_goaway_at(b, n, e, l, __LINE__)

/* RFC 9113's connection errors, each ending the session with GOAWAY, its
 * code and the last stream id. */
static void test_connection_errors(void **state)
{
    static uint8_t b[1 << 16];
    uint8_t pl[64] = {0};
    size_t n;

    memcpy(b, "PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", 24); /* a bad preface */
    expect_goaway(b, 24, NGHTTP2_PROTOCOL_ERROR, 0);
    memcpy(b, PREFACE, 24); /* the first frame is not SETTINGS */
    n = 24 + fr(b + 24, 6, 0, 0, pl, 8);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* a call answered, then DATA on stream 0: the GOAWAY covers it */
    n += raw_call(b + n, 1);
    n += fr(b + n, 0, 0, 0, pl, 4);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 1);

    n = hello(b); /* an even stream id */
    uint8_t block[256];
    size_t bn = request_block(block, "", 0);
    n += fr(b + n, 1, 0x5, 2, block, bn);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* a stream id below the last */
    n += fr(b + n, 1, 0x5, 5, block, bn);
    n += fr(b + n, 1, 0x5, 3, block, bn);
    expect_goaway(b, n, NGHTTP2_STREAM_CLOSED, 5);

    n = hello(b); /* a header block interrupted by another frame */
    n += fr(b + n, 1, 0, 1, block, 10);
    n += fr(b + n, 6, 0, 0, pl, 8);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 1);

    n = hello(b); /* ... by CONTINUATION on another stream */
    n += fr(b + n, 1, 0, 1, block, 10);
    n += fr(b + n, 9, 0x4, 3, block + 10, bn - 10);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 1);

    n = hello(b); /* CONTINUATION without a header block */
    n += fr(b + n, 9, 0x4, 1, block, bn);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* a frame above SETTINGS_MAX_FRAME_SIZE: refused from its header */
    n += fr(b + n, 0, 0, 1, NULL, 0);
    b[n - 9] = 0; /* 16,385 bytes announced */
    b[n - 8] = 0x40;
    b[n - 7] = 0x01;
    expect_goaway(b, n, NGHTTP2_FRAME_SIZE_ERROR, 0);

    n = hello(b); /* SETTINGS of 5 bytes */
    n += fr(b + n, 4, 0, 0, pl, 5);
    expect_goaway(b, n, NGHTTP2_FRAME_SIZE_ERROR, 0);

    n = hello(b); /* SETTINGS ACK with a payload */
    n += fr(b + n, 4, 1, 0, pl, 6);
    expect_goaway(b, n, NGHTTP2_FRAME_SIZE_ERROR, 0);

    n = hello(b); /* SETTINGS on a stream */
    n += fr(b + n, 4, 0, 1, NULL, 0);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    const uint8_t window_2_31[] = {0, 4, 0x80, 0, 0, 0};
    n = hello(b); /* INITIAL_WINDOW_SIZE above 2^31 - 1 */
    n += fr(b + n, 4, 0, 0, window_2_31, 6);
    expect_goaway(b, n, NGHTTP2_FLOW_CONTROL_ERROR, 0);

    const uint8_t frame_100[] = {0, 5, 0, 0, 0, 100};
    n = hello(b); /* MAX_FRAME_SIZE below 16,384 */
    n += fr(b + n, 4, 0, 0, frame_100, 6);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    const uint8_t push_2[] = {0, 2, 0, 0, 0, 2};
    n = hello(b); /* ENABLE_PUSH 2 */
    n += fr(b + n, 4, 0, 0, push_2, 6);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    const uint8_t incr_max[] = {0x7f, 0xff, 0xff, 0xff}, incr_0[] = {0, 0, 0, 0};
    n = hello(b); /* the connection's window above 2^31 - 1 */
    n += fr(b + n, 8, 0, 0, incr_max, 4);
    expect_goaway(b, n, NGHTTP2_FLOW_CONTROL_ERROR, 0);

    n = hello(b); /* a WINDOW_UPDATE of 0 on the connection */
    n += fr(b + n, 8, 0, 0, incr_0, 4);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* WINDOW_UPDATE of 3 bytes */
    n += fr(b + n, 8, 0, 0, incr_0, 3);
    expect_goaway(b, n, NGHTTP2_FRAME_SIZE_ERROR, 0);

    n = hello(b); /* PING of 7 bytes */
    n += fr(b + n, 6, 0, 0, pl, 7);
    expect_goaway(b, n, NGHTTP2_FRAME_SIZE_ERROR, 0);

    n = hello(b); /* PING on a stream */
    n += fr(b + n, 6, 0, 1, pl, 8);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* PUSH_PROMISE from a client */
    n += fr(b + n, 5, 0x4, 1, pl, 4);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* DATA whose padding is longer than the frame */
    n += fr(b + n, 1, 0x4, 1, block, bn);
    pl[0] = 10;
    n += fr(b + n, 0, 0x8, 1, pl, 5);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 1);

    n = hello(b); /* DATA on an idle stream */
    n += fr(b + n, 0, 0, 7, pl, 5);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* RST_STREAM on an idle stream */
    n += fr(b + n, 3, 0, 9, incr_0, 4);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);

    n = hello(b); /* a header block HPACK cannot decode (index 127 + 1000: no entry) */
    const uint8_t bad_hpack[] = {0xff, 0xe8, 0x07};
    n += fr(b + n, 1, 0x5, 1, bad_hpack, sizeof(bad_hpack));
    expect_goaway(b, n, NGHTTP2_COMPRESSION_ERROR, 1);

    n = hello(b); /* GOAWAY on a stream */
    n += fr(b + n, 7, 0, 1, pl, 8);
    expect_goaway(b, n, NGHTTP2_PROTOCOL_ERROR, 0);
}

/* A malformed request or a frame wrong for its stream: RST_STREAM, and
 * the connection goes on (a call after it is answered). */
static void expect_rst(const uint8_t *frames, size_t len, int32_t id, int error)
{
    static uint8_t b[1 << 17];
    struct raw *r = raw_new();
    size_t n = hello(b);

    memcpy(b + n, frames, len);
    n += len;
    n += raw_call(b + n, 41);
    raw_feed(r, b, n);
    assert_int_equal(r->rst[id / 2], error);
    assert_int_equal(r->goaway_error, -1);
    assert_int_equal(r->status[41 / 2], 0);
    assert_false(sl__h2_done(r->p.server));
    raw_free(r);
}

static size_t headers_with(uint8_t *p, uint32_t id, uint8_t flags, const char *extra, size_t len)
{
    uint8_t block[512];

    return fr(p, 1, 0x4 | flags, id, block, request_block(block, extra, len));
}

static void test_stream_errors(void **state)
{
    static uint8_t b[1 << 16];
    uint8_t msg[256];
    size_t n, mn = framed_request(msg);
    static const char upper[] = "\x00\x03X-a\x01v",
                      conn[] = "\x00\x0a"
                               "connection\x01x",
                      te[] = "\x00\x02te\x04gzip", nul[] = "\x00\x03x-a\x02v\x00",
                      space[] = "\x00\x03x-a\x02v ", late_pseudo[] = "\x00\x03x-a\x01v\x84",
                      twice[] = "\x83", unknown[] = "\x00\x05:fooo\x01v",
                      clen[] = "\x00\x0e"
                               "content-length\x02"
                               "99";

    expect_rst(b, headers_with(b, 1, 1, upper, sizeof(upper) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, conn, sizeof(conn) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, te, sizeof(te) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, nul, sizeof(nul) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, space, sizeof(space) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, late_pseudo, sizeof(late_pseudo) - 1), 1,
               NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, twice, 1), 1, NGHTTP2_PROTOCOL_ERROR);
    expect_rst(b, headers_with(b, 1, 1, unknown, sizeof(unknown) - 1), 1, NGHTTP2_PROTOCOL_ERROR);
    /* content-length 99 and a shorter message */
    n = headers_with(b, 1, 0, clen, sizeof(clen) - 1);
    n += fr(b + n, 0, 1, 1, msg, mn);
    expect_rst(b, n, 1, NGHTTP2_PROTOCOL_ERROR);
    /* no :path */
    const uint8_t no_path[] = {0x83, 0x86, 0x01, 0x01, 't'};
    expect_rst(b, fr(b, 1, 0x5, 1, no_path, sizeof(no_path)), 1, NGHTTP2_PROTOCOL_ERROR);
    /* DATA after END_STREAM (half-closed remote) */
    n = headers_with(b, 1, 0, "", 0);
    n += fr(b + n, 0, 0, 1, msg, 3);
    n += fr(b + n, 0, 1, 1, msg + 3, 2); /* an incomplete message: INTERNAL, answered */
    n += fr(b + n, 0, 0, 1, msg, 3);
    expect_rst(b, n, 1, NGHTTP2_STREAM_CLOSED);
    /* a stream's window above 2^31 - 1 */
    const uint8_t incr_max[] = {0x7f, 0xff, 0xff, 0xff}, incr_0[] = {0, 0, 0, 0};
    n = headers_with(b, 1, 0, "", 0);
    n += fr(b + n, 8, 0, 1, incr_max, 4);
    expect_rst(b, n, 1, NGHTTP2_FLOW_CONTROL_ERROR);
    n = headers_with(b, 1, 0, "", 0); /* a WINDOW_UPDATE of 0 on a stream */
    n += fr(b + n, 8, 0, 1, incr_0, 4);
    expect_rst(b, n, 1, NGHTTP2_PROTOCOL_ERROR);
    /* a stream that depends on itself */
    const uint8_t self[] = {0, 0, 0, 3, 16};
    expect_rst(b, fr(b, 2, 0, 3, self, 5), 3, NGHTTP2_PROTOCOL_ERROR);
    /* PRIORITY of 4 bytes */
    expect_rst(b, fr(b, 2, 0, 3, self, 4), 3, NGHTTP2_FRAME_SIZE_ERROR);
    /* trailers without END_STREAM */
    n = headers_with(b, 1, 0, "", 0);
    n += fr(b + n, 1, 0x4, 1, "\x00\x01x\x01y", 5);
    expect_rst(b, n, 1, NGHTTP2_PROTOCOL_ERROR);
    /* pseudo-headers in trailers */
    n = headers_with(b, 1, 0, "", 0);
    n += fr(b + n, 0, 0, 1, msg, mn);
    n += fr(b + n, 1, 0x5, 1, "\x83", 1);
    expect_rst(b, n, 1, NGHTTP2_PROTOCOL_ERROR);
}

/* Padding (HEADERS with PRIORITY and padding, CONTINUATION, padded DATA
 * in two frames) is read through; trailers from the client are taken;
 * PING is answered with its payload and SETTINGS acknowledged. */
static void test_padding_continuation_ping(void **state)
{
    static uint8_t b[1 << 16];
    uint8_t block[256], msg[256], pl[300] = {0};
    size_t bn = request_block(block, "", 0), mn = framed_request(msg), n;
    struct raw *r = raw_new();

    n = hello(b);
    pl[0] = 7;                                 /* pad length */
    memcpy(pl + 1, "\x00\x00\x00\x00\x10", 5); /* depends on 0, weight 16 */
    memcpy(pl + 6, block, 10);
    n += fr(b + n, 1, 0x8 | 0x20, 1, pl, 6 + 10 + 7);
    n += fr(b + n, 9, 0, 1, block + 10, 20);
    n += fr(b + n, 9, 0x4, 1, block + 30, bn - 30);
    pl[0] = 3;
    memcpy(pl + 1, msg, 4);
    n += fr(b + n, 0, 0x8, 1, pl, 1 + 4 + 3);
    pl[0] = 0;
    memcpy(pl + 1, msg + 4, mn - 4);
    n += fr(b + n, 0, 0x8, 1, pl, 1 + mn - 4);
    n += fr(b + n, 1, 0x5, 1, "\x00\x01x\x01y", 5); /* trailers end it */
    n += fr(b + n, 6, 0, 0, "pingpong", 8);
    raw_feed(r, b, n);
    assert_int_equal(r->goaway_error, -1);
    assert_int_equal(r->http[0], 200);
    assert_int_equal(r->status[0], 0);
    assert_true(r->data[0] > 5);
    assert_int_equal(r->pings, 1);
    assert_memory_equal(r->ping, "pingpong", 8);
    assert_int_equal(r->settings_acks, 1);
    raw_free(r);
}

/* A peer that starts with no window: the reply's headers go, its message
 * waits; SETTINGS_INITIAL_WINDOW_SIZE raised releases it and its
 * trailers. Its HEADER_TABLE_SIZE of 0 is honoured (a table size update
 * first: the client's decoder insists). */
static void test_initial_window_change_releases(void **state)
{
    static uint8_t b[1 << 16];
    const uint8_t zero[] = {0, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    const uint8_t open[] = {0, 4, 0, 0, 0xff, 0xff};
    struct raw *r = raw_new();
    size_t n;

    memcpy(b, PREFACE, 24);
    n = 24 + fr(b + 24, 4, 0, 0, zero, sizeof(zero));
    n += raw_call(b + n, 1);
    assert_int_equal(nghttp2_hd_inflate_change_table_size(r->inf, 0), 0);
    raw_feed(r, b, n);
    assert_int_equal(r->http[0], 200);
    assert_int_equal(r->data[0], 0);
    assert_int_equal(r->status[0], -1);
    assert_true(sl__h2_waiting(r->p.server));
    r->out_len = 0;
    raw_feed(r, b, fr(b, 4, 0, 0, open, sizeof(open)));
    assert_true(r->data[0] > 0);
    assert_int_equal(r->status[0], 0);
    assert_int_equal(r->settings_acks, 1);
    assert_false(sl__h2_waiting(r->p.server));
    assert_int_equal(r->goaway_error, -1);
    raw_free(r);
}

/* Streams above SETTINGS_MAX_CONCURRENT_STREAMS are refused
 * (REFUSED_STREAM), the others kept; a graceful GOAWAY covers the last
 * stream, streams after it are ignored, and the session is done once
 * the streams it covers are over. */
static void test_refused_streams_and_goaway(void **state)
{
    static uint8_t b[1 << 17];
    uint8_t msg[256];
    size_t n = hello(b), mn = framed_request(msg);
    struct raw *r = raw_new();

    for (uint32_t id = 1; id <= 201; id += 2)
        n += headers_with(b + n, id, 0, "", 0);
    raw_feed(r, b, n);
    assert_int_equal(r->rst[201 / 2], NGHTTP2_REFUSED_STREAM);
    assert_int_equal(r->goaway_error, -1);
    assert_true(sl__h2_partial(r->p.server));
    r->out_len = 0;
    sl__h2_goaway(r->p.server);
    sl__h2_flush(r->p.server);
    raw_parse(r);
    assert_int_equal(r->goaway_error, NGHTTP2_NO_ERROR);
    assert_int_equal(r->goaway_last, 201);
    assert_false(sl__h2_done(r->p.server));
    r->out_len = 0;
    n = 0;
    for (uint32_t id = 1; id <= 199; id += 2)
        n += fr(b + n, 0, 1, id, msg, mn);
    n += raw_call(b + n, 203); /* after the GOAWAY: ignored */
    raw_feed(r, b, n);
    assert_int_equal(r->status[1 / 2], 0);
    assert_int_equal(r->status[199 / 2], 0);
    assert_false(sl__h2_partial(r->p.server));
    assert_true(sl__h2_done(r->p.server));
    raw_free(r);
}

/* The header block cache: a block decoded that left the HPACK table as it
 * was is not decoded again when it comes back, until a block changes the
 * table - then the same bytes mean what the table now says. */
static void test_header_block_cache(void **state)
{
    static uint8_t b[1 << 16];
    static const char path[] = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
    uint8_t fixed[128], block[256], msg[256];
    size_t fn = 0, mn = framed_request(msg), n = hello(b);
    struct raw *r = raw_new();
    struct {
        uint32_t id;
        const char *ct; /* a content-type entered into the table, NULL: a reference to it */
        int http;
    } calls[] = {{1, "application/grpc", 200},  {3, NULL, 200}, {5, NULL, 200},
                 {7, "text/plain", 415},        {9, NULL, 415}, {11, NULL, 415},
                 {13, "application/grpc", 200}, {15, NULL, 200}};

    fixed[fn++] = 0x83; /* :method POST */
    fixed[fn++] = 0x86; /* :scheme http */
    fixed[fn++] = 0x04; /* :path, not indexed */
    fixed[fn++] = sizeof(path) - 1;
    memcpy(fixed + fn, path, sizeof(path) - 1);
    fn += sizeof(path) - 1;
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        size_t bn = fn;

        memcpy(block, fixed, fn);
        if (calls[i].ct != NULL) { /* content-type (31), incremental indexing: entry 62 */
            block[bn++] = 0x5f;
            block[bn++] = (uint8_t)strlen(calls[i].ct);
            memcpy(block + bn, calls[i].ct, strlen(calls[i].ct));
            bn += strlen(calls[i].ct);
        } else {
            block[bn++] = 0xbe; /* entry 62 */
        }
        n += fr(b + n, 1, 0x4, calls[i].id, block, bn);
        n += fr(b + n, 0, 0x1, calls[i].id, msg, mn);
    }
    raw_feed(r, b, n);
    assert_int_equal(r->goaway_error, -1);
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        assert_int_equal(r->http[calls[i].id / 2], calls[i].http);
        assert_int_equal(r->status[calls[i].id / 2], calls[i].http == 200 ? 0 : -1);
    }
    raw_free(r);
}

/* The owner's route for a path is asked at a request's headers and handed
 * back with its call; a header block the session does not decode again
 * (the same block, call after call) keeps the route it had. */
static unsigned routes_asked;

static int32_t count_route(void *owner, struct sl_str path)
{
    routes_asked++;
    return 41;
}

static void routed_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *c)
{
    assert_false(c->stream);
    assert_int_equal(c->route, 41);
    on_call(owner, s, c);
}

static const struct sl__h2_ops route_ops = {
    .send = on_send, .call = routed_call, .route = count_route};

static void test_route_remembered(void **state)
{
    struct pair *p = pair_new_ops(65536, &route_ops);
    static uint8_t msg[256];
    static struct sl_str bodies[20];
    size_t len = framed_request(msg);

    routes_asked = 0;
    for (size_t i = 0; i < 20; i++) {
        bodies[i] = (struct sl_str){(const char *)msg, len};
        submit(p, &bodies[i]);
        exchange(p);
    }
    assert_int_equal(p->answers, 20);
    for (int sid = 1; sid < 40; sid += 2)
        assert_int_equal(p->grpc_status[sid / 2], 0);
    /* the first block indexes its fields, the second is the one cached */
    assert_true(routes_asked >= 1 && routes_asked <= 2);
    pair_free(p);
}

/* A request that is not a gRPC call is answered at its headers (405) and
 * its stream stays half-closed until the client ends it: what the client
 * sends on it meanwhile is judged (a WINDOW_UPDATE of 0: PROTOCOL_ERROR),
 * its body is dropped, and after its end the stream is closed. */
static void test_refused_at_headers_stays_open(void **state)
{
    static uint8_t b[1 << 16];
    const uint8_t get[] = {0x82, 0x86, 0x84, 0x01, 0x01, 't'}; /* GET http / t */
    const uint8_t incr_0[] = {0, 0, 0, 0};
    struct raw *r = raw_new();
    size_t n = hello(b);

    n += fr(b + n, 1, 0x4, 1, get, sizeof(get));
    n += fr(b + n, 1, 0x4, 3, get, sizeof(get));
    raw_feed(r, b, n);
    assert_int_equal(r->http[0], 405);
    assert_int_equal(r->http[1], 405);
    assert_int_equal(r->rst[0], -1); /* not reset: the client may finish */
    r->out_len = 0;
    n = fr(b, 0, 0, 1, "body", 4);
    n += fr(b + n, 0, 1, 1, "more", 4);
    n += fr(b + n, 8, 0, 3, incr_0, 4);
    raw_feed(r, b, n);
    assert_int_equal(r->rst[0], -1);
    assert_int_equal(r->rst[1], NGHTTP2_PROTOCOL_ERROR);
    r->out_len = 0;
    raw_feed(r, b, fr(b, 0, 0, 1, "late", 4)); /* closed since its end */
    assert_int_equal(r->rst[0], NGHTTP2_STREAM_CLOSED);
    assert_int_equal(r->goaway_error, -1);
    raw_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_request),
        cmocka_unit_test(test_decode_refusals),
        cmocka_unit_test(test_encode_answer),
        cmocka_unit_test(test_warm_session_allocates_nothing),
        cmocka_unit_test(test_message_above_cap),
        cmocka_unit_test(test_message_buffers_within_budget),
        cmocka_unit_test(test_header_list_above_cap),
        cmocka_unit_test(test_reply_waiting_for_window),
        cmocka_unit_test(test_stream_messages_one_by_one),
        cmocka_unit_test(test_stream_reset_by_peer),
        cmocka_unit_test(test_stream_message_above_cap),
        cmocka_unit_test(test_stream_queue_bounded),
        cmocka_unit_test(test_stream_left_open),
        cmocka_unit_test(test_connection_errors),
        cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_padding_continuation_ping),
        cmocka_unit_test(test_initial_window_change_releases),
        cmocka_unit_test(test_refused_streams_and_goaway),
        cmocka_unit_test(test_header_block_cache),
        cmocka_unit_test(test_route_remembered),
        cmocka_unit_test(test_refused_at_headers_stays_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
