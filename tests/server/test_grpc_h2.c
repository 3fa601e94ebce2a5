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

static bool echo_streaming(void *owner, struct sl_str path)
{
    return path.len == strlen(ECHO) && memcmp(path.p, ECHO, path.len) == 0;
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
                                           .streaming = echo_streaming,
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
