/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_stream.c - one gRPC call on an HTTP/2 stream (h2.h): its headers
 * (:method, :path, content-type, grpc-timeout, the header list's size),
 * its message (the 5-byte prefix, the size cap, exactly one message), the
 * refusals the session makes without its owner, and the answers: a
 * message with grpc-status 0 in the trailers, or Trailers-Only.
 *
 * A stream (ops->streaming) is handed over at its headers; its request
 * messages go up one by one as each is whole (the input buffer holds one
 * message at most), and its replies queue in the output buffer, which the
 * data source drains as the peer's window allows, deferring when it is
 * empty, until the owner's end puts the trailers behind the last one.
 *
 * Stream objects are recycled with their buffers, so a warm session
 * allocates none per call. It keeps track of the replies that wait for
 * the peer's flow-control window, for the owner's write timeout
 * (sl__h2_stalled_until). It does not decode protobuf (the owner does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2_int.h"

#define PREFIX      5
#define KEEP_BUFFER (64u << 10) /* a recycled stream keeps buffers up to this */

#define NV(name, value)                                                                            \
    {                                                                                              \
        (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, sizeof(value) - 1,                \
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE                           \
    }

static const nghttp2_nv reply_headers[] = {NV(":status", "200"),
                                           NV("content-type", "application/grpc")};
static const nghttp2_nv ok_trailers[] = {NV("grpc-status", "0")};

/* ------------------------------------------------------------ objects */

static void set_partial(struct sl__h2_stream *s, bool partial)
{
    if (s->partial == partial)
        return;
    if (partial)
        s->h->n_partial++;
    else
        s->h->n_partial--;
    s->partial = partial;
}

static void set_sending(struct sl__h2_stream *s, bool sending)
{
    if (s->sending == sending)
        return;
    if (sending)
        s->h->n_sending++;
    else
        s->h->n_sending--;
    s->sending = sending;
    s->since_ms = -1;
}

static struct sl__h2_stream *stream_get(struct sl__h2 *h)
{
    struct sl__h2_stream *s = h->free_streams;

    if (s != NULL) {
        h->free_streams = s->next_free;
    } else {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return NULL;
        s->next_all = h->all_streams;
        h->all_streams = s;
    }
    h->n_streams++;
    return s;
}

/* The owner's budget (ops->budget, h2-t.h) of the session's message
 * buffers; not h->budget, the flood budget of frames. */
static bool owner_budget(struct sl__h2 *h, int64_t delta, bool refusable)
{
    return h->ops->budget == NULL || h->ops->budget(h->owner, delta, refusable);
}

static void give_back(struct sl__h2 *h, uint8_t **buf, size_t *cap)
{
    owner_budget(h, -(int64_t)*cap, false);
    free(*buf);
    *buf = NULL;
    *cap = 0;
}

static void stream_put(struct sl__h2_stream *s)
{
    struct sl__h2 *h = s->h;

    set_partial(s, false);
    set_sending(s, false);
    if (s->in_cap > KEEP_BUFFER)
        give_back(h, &s->in, &s->in_cap);
    if (s->out_cap > KEEP_BUFFER)
        give_back(h, &s->out, &s->out_cap);
    s->next_free = h->free_streams;
    h->free_streams = s;
    h->n_streams--;
}

void sl__h2_streams_free(struct sl__h2 *h)
{
    struct sl__h2_stream *s = h->all_streams, *next;

    for (; s != NULL; s = next) {
        next = s->next_all;
        free(s->in);
        free(s->out);
        free(s);
    }
    h->all_streams = h->free_streams = NULL;
}

void *sl__h2_owner_area(struct sl__h2_stream *s)
{
    return s->owner;
}

/* Grow *buf to hold `need` bytes, within the owner's budget where
 * `refusable`. false when the budget refuses or out of memory. */
static bool reserve(struct sl__h2 *h, uint8_t **buf, size_t *cap, size_t need, bool refusable)
{
    size_t c = *cap ? *cap : 256;
    uint8_t *p;

    if (need <= *cap)
        return true;
    while (c < need)
        c *= 2;
    if (!owner_budget(h, (int64_t)(c - *cap), refusable && c > SL__H2_SMALL_MESSAGE))
        return false;
    p = realloc(*buf, c);
    if (p == NULL) {
        owner_budget(h, -(int64_t)(c - *cap), false);
        return false;
    }
    *buf = p;
    *cap = c;
    return true;
}

/* ------------------------------------------------------------ answers */

/* Write `message` percent-encoded as grpc-message wants it into out. */
static size_t pct_encode(const char *message, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)message; *p && n + 4 < cap; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    return n;
}

/* The session answered `s` before its end: stop the peer sending the rest
 * once our END_STREAM is out (on_frame_send). */
static void answered(struct sl__h2_stream *s)
{
    s->answered = true;
    set_partial(s, false);
}

static void trailers_only(struct sl__h2_stream *s, enum sl__grpc_status code, const char *message)
{
    char status[12], text[512];
    int sn = snprintf(status, sizeof(status), "%d", (int)code);
    size_t tn = pct_encode(message, text, sizeof(text));
    nghttp2_nv nv[] = {
        NV(":status", "200"),
        NV("content-type", "application/grpc"),
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, (size_t)sn, NGHTTP2_NV_FLAG_NO_COPY_NAME},
        {(uint8_t *)"grpc-message", (uint8_t *)text, 12, tn, NGHTTP2_NV_FLAG_NO_COPY_NAME},
    };

    answered(s);
    nghttp2_submit_response(s->h->ng, s->id, nv, tn > 0 ? 4 : 3, NULL);
}

static void http_refuse(struct sl__h2_stream *s, int status)
{
    static const nghttp2_nv nv405[] = {NV(":status", "405")};
    static const nghttp2_nv nv415[] = {NV(":status", "415")};

    answered(s);
    nghttp2_submit_response(s->h->ng, s->id, status == 405 ? nv405 : nv415, 1, NULL);
}

/* The trailers of a stream the owner ended: its status and message. */
static int stream_trailers(nghttp2_session *ng, struct sl__h2_stream *s)
{
    char status[12];
    int sn = snprintf(status, sizeof(status), "%d", (int)s->fin_code);
    nghttp2_nv nv[] = {
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, (size_t)sn, NGHTTP2_NV_FLAG_NO_COPY_NAME},
        {(uint8_t *)"grpc-message", (uint8_t *)s->fin_msg, 12, s->fin_len,
         NGHTTP2_NV_FLAG_NO_COPY_NAME},
    };

    return nghttp2_submit_trailer(ng, s->id, nv, s->fin_len > 0 ? 2 : 1);
}

static ssize_t read_reply(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
                          uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct sl__h2_stream *s = src->ptr;
    size_t n = s->out_len - s->out_sent;

    if (n == 0 && s->streaming && !s->finishing) {
        s->deferred = true; /* sl__h2_send or the end resumes it */
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n > length)
        n = length;
    memcpy(buf, s->out + s->out_sent, n);
    s->out_sent += n;
    s->sent_total += n;
    if (s->out_sent == s->out_len) {
        set_sending(s, false); /* the trailers left are not flow-controlled */
        if (s->streaming && !s->finishing)
            return (ssize_t)n; /* more may come */
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if ((s->streaming ? stream_trailers(ng, s)
                          : nghttp2_submit_trailer(ng, id, ok_trailers, 1)) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* Whether the owner's answer still has a stream to go to. */
static bool still_open(const struct sl__h2_stream *s)
{
    return s->open && !s->answered;
}

void sl__h2_release(struct sl__h2 *h, struct sl__h2_stream *s)
{
    s->busy = false;
    if (!s->open)
        stream_put(s);
}

void sl__h2_reply(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_reply};

    if (!still_open(s))
        return;
    if (len > UINT32_MAX || !reserve(s->h, &s->out, &s->out_cap, PREFIX + len, false)) {
        trailers_only(s, SL__GRPC_INTERNAL, "reply too large");
        return;
    }
    s->out[0] = 0;
    s->out[1] = (uint8_t)(len >> 24);
    s->out[2] = (uint8_t)(len >> 16);
    s->out[3] = (uint8_t)(len >> 8);
    s->out[4] = (uint8_t)len;
    memcpy(s->out + PREFIX, msg, len);
    s->out_len = PREFIX + len;
    s->out_sent = 0;
    answered(s);
    set_sending(s, true);
    s->responded = true;
    nghttp2_submit_response(h->ng, s->id, reply_headers, 2, &prd);
}

/* Frame msg[0..len) at the end of the stream's queued output. */
static bool queue_message(struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    size_t left = s->out_len - s->out_sent;

    if (s->out_sent > 0) { /* what left is dropped from the front */
        memmove(s->out, s->out + s->out_sent, left);
        s->out_len = left;
        s->out_sent = 0;
    }
    if (len > UINT32_MAX || left + PREFIX + len > SL__H2_STREAM_QUEUE ||
        !reserve(s->h, &s->out, &s->out_cap, left + PREFIX + len, true))
        return false;
    s->out[left] = 0;
    s->out[left + 1] = (uint8_t)(len >> 24);
    s->out[left + 2] = (uint8_t)(len >> 16);
    s->out[left + 3] = (uint8_t)(len >> 8);
    s->out[left + 4] = (uint8_t)len;
    memcpy(s->out + left + PREFIX, msg, len);
    s->out_len = left + PREFIX + len;
    return true;
}

/* The stream's data source has something again: wake it. */
static void resume(struct sl__h2_stream *s)
{
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_reply};

    if (!s->responded) {
        s->responded = true;
        nghttp2_submit_response(s->h->ng, s->id, reply_headers, 2, &prd);
    } else if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->h->ng, s->id);
    }
}

bool sl__h2_send(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    if (!still_open(s) || !s->streaming || !queue_message(s, msg, len))
        return false;
    set_sending(s, true);
    resume(s);
    return true;
}

void sl__h2_fail(struct sl__h2 *h, struct sl__h2_stream *s, enum sl__grpc_status code,
                 const char *message)
{
    if (!still_open(s))
        return;
    if (!s->responded) {
        trailers_only(s, code, message);
        return;
    }
    s->fin_code = (uint8_t)code;
    s->fin_len = (uint16_t)pct_encode(message, s->fin_msg, sizeof(s->fin_msg));
    s->finishing = true;
    answered(s);
    resume(s);
}

/* The session ends a stream that is its owner's: with `code`, and the
 * owner is told (ops->gone), which gives it back. */
static void stream_refuse(struct sl__h2_stream *s, enum sl__grpc_status code, const char *message)
{
    sl__h2_fail(s->h, s, code, message);
    if (s->busy && s->h->ops->gone != NULL)
        s->h->ops->gone(s->h->owner, s);
}

void sl__h2_streams_end(struct sl__h2 *h, enum sl__grpc_status code, const char *message)
{
    for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all)
        if (s->open && s->busy && s->streaming && !s->answered)
            stream_refuse(s, code, message);
}

bool sl__h2_waiting(const struct sl__h2 *h)
{
    return h->n_sending > 0;
}

int64_t sl__h2_stalled_until(struct sl__h2 *h, int64_t now_ms, int64_t timeout_ms)
{
    int64_t until = -1;

    if (h->n_sending == 0 || h->fatal)
        return -1;
    for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all) {
        if (!s->sending)
            continue;
        if (s->since_ms < 0 || s->sent_total != s->seen_sent) {
            s->since_ms = now_ms; /* first looked at, or some of it left since */
            s->seen_sent = s->sent_total;
        }
        if (until < 0 || s->since_ms + timeout_ms < until)
            until = s->since_ms + timeout_ms;
    }
    if (until >= 0 && until <= now_ms)
        sl__h2_terminate(h, NGHTTP2_ENHANCE_YOUR_CALM);
    return until;
}

int sl__h2_on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct sl__h2_stream *s;

    if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (s != NULL && !s->ended) /* answered early: the rest of the request is not wanted */
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

/* ------------------------------------------------------------ requests */

int sl__h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct sl__h2 *h = ud;
    struct sl__h2_stream *s;

    h->list_bytes = 0; /* every header block is a header list of its own */
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    /* Streams the peer reset while their answer is being decided still
     * count, so resets cannot make room for more work than the limit. */
    if (h->n_streams >= 2 * h->lim.max_concurrent_streams || (s = stream_get(h)) == NULL) {
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    s->h = h;
    s->id = f->hd.stream_id;
    s->open = true;
    s->busy = s->answered = s->ended = s->partial = s->post = s->grpc = s->path_long = false;
    s->streaming = s->responded = s->deferred = s->finishing = false;
    s->timeout_ns = -1;
    s->path_len = 0;
    s->in_len = s->out_len = s->out_sent = s->sent_total = 0;
    set_partial(s, true);
    nghttp2_session_set_stream_user_data(ng, s->id, s);
    return 0;
}

/* grpc-timeout: up to 8 digits and a unit (H, M, S, m, u, n), in ns
 * (saturated); -1 when malformed. */
static int64_t parse_timeout(const uint8_t *v, size_t len)
{
    static const struct {
        char unit;
        int64_t ns;
    } units[] = {{'H', 3600 * SL_NS_PER_S},
                 {'M', 60 * SL_NS_PER_S},
                 {'S', SL_NS_PER_S},
                 {'m', SL_NS_PER_MS},
                 {'u', 1000},
                 {'n', 1}};
    int64_t n = 0;

    if (len < 2 || len > 9)
        return -1;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        if (v[len - 1] == units[u].unit)
            return n > INT64_MAX / units[u].ns ? INT64_MAX : n * units[u].ns;
    return -1;
}

/* name[0..len) is the literal `want`: lengths compared first, no strlen. */
#define IS(name, len, want) ((len) == sizeof(want) - 1 && memcmp(name, want, sizeof(want) - 1) == 0)

static bool grpc_content_type(const uint8_t *v, size_t len)
{
    return len >= 16 && memcmp(v, "application/grpc", 16) == 0 &&
           (len == 16 || v[16] == '+' || v[16] == ';');
}

int sl__h2_on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    struct sl__h2_stream *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    int rv = sl__h2_count_header(ud, namelen, valuelen); /* first: streams refused count too */

    if (rv != 0 || s == NULL || s->answered || f->hd.type != NGHTTP2_HEADERS ||
        f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return rv; /* trailers from a client are ignored */
    if (IS(name, namelen, ":method")) {
        s->post = IS(value, valuelen, "POST");
    } else if (IS(name, namelen, ":path")) {
        s->path_long = valuelen > sizeof(s->path);
        s->path_len = s->path_long ? 0 : (uint16_t)valuelen;
        memcpy(s->path, value, s->path_len);
    } else if (IS(name, namelen, "content-type")) {
        s->grpc = grpc_content_type(value, valuelen);
    } else if (IS(name, namelen, "grpc-timeout")) {
        s->timeout_ns = parse_timeout(value, valuelen);
    }
    return 0;
}

/* A field nghttp2 drops (an invalid name) cost its validation all the
 * same: counted as the others are. */
int sl__h2_on_invalid_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                             size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                             void *ud)
{
    return sl__h2_count_header(ud, namelen, valuelen);
}

static struct sl_str path_of(const struct sl__h2_stream *s)
{
    return (struct sl_str){s->path_long ? "" : s->path, s->path_len};
}

/* The request's headers are complete: refuse what is not a gRPC call, and
 * hand a stream over. */
static void end_of_headers(struct sl__h2_stream *s)
{
    const struct sl__h2_ops *ops = s->h->ops;
    struct sl__h2_call call;

    if (!s->post) {
        http_refuse(s, 405);
        return;
    }
    if (!s->grpc) {
        http_refuse(s, 415);
        return;
    }
    if (ops->streaming == NULL || ops->message == NULL || !ops->streaming(s->h->owner, path_of(s)))
        return;
    s->streaming = true;
    set_partial(s, false); /* from now on, only while a message is half there */
    call = (struct sl__h2_call){path_of(s), NULL, 0, s->timeout_ns, true};
    s->busy = true;
    ops->call(s->h->owner, s, &call);
}

static size_t message_len(const struct sl__h2_stream *s)
{
    return (size_t)s->in[1] << 24 | (size_t)s->in[2] << 16 | (size_t)s->in[3] << 8 | s->in[4];
}

/* What is wrong with the message whose prefix is in s->in, or NULL. */
static const char *check_prefix(struct sl__h2_stream *s, char *why, size_t cap,
                                enum sl__grpc_status *code)
{
    size_t len = message_len(s);

    *code = SL__GRPC_INTERNAL;
    if (s->in[0] == 1) {
        *code = SL__GRPC_UNIMPLEMENTED;
        return "compressed messages are not supported (grpc-encoding: identity)";
    }
    if (s->in[0] != 0)
        return "malformed message prefix";
    if (len > s->h->lim.max_message_bytes) {
        *code = SL__GRPC_RESOURCE_EXHAUSTED;
        snprintf(why, cap, "message of %zu bytes above %zu (grpc.max_message_bytes)", len,
                 s->h->lim.max_message_bytes);
        return why;
    }
    return NULL;
}

/* What is wrong with the bytes of the message received so far, or NULL. */
static const char *check_message(struct sl__h2_stream *s, char *why, size_t cap,
                                 enum sl__grpc_status *code)
{
    const char *bad;

    if (s->in_len < PREFIX)
        return NULL;
    if ((bad = check_prefix(s, why, cap, code)) != NULL)
        return bad;
    if (s->in_len > PREFIX + message_len(s))
        return "more than one request message in a unary call";
    return NULL;
}

/* A stream's bytes: each message whole goes up on its own; the buffer
 * never holds more than the one being received. */
static void stream_data(struct sl__h2_stream *s, const uint8_t *data, size_t len)
{
    enum sl__grpc_status code;
    const char *bad;
    char why[128];

    while (len > 0 && still_open(s) && s->busy) {
        size_t need = s->in_len < PREFIX ? PREFIX - s->in_len : PREFIX + message_len(s) - s->in_len;
        size_t take = need < len ? need : len;

        if (!reserve(s->h, &s->in, &s->in_cap, s->in_len + take, true)) {
            stream_refuse(s, SL__GRPC_RESOURCE_EXHAUSTED,
                          "no memory for the message (server.max_buffer_bytes)");
            return;
        }
        memcpy(s->in + s->in_len, data, take);
        s->in_len += take;
        data += take;
        len -= take;
        if (s->in_len == PREFIX && (bad = check_prefix(s, why, sizeof(why), &code)) != NULL) {
            stream_refuse(s, code, bad);
            return;
        }
        if (s->in_len >= PREFIX && s->in_len == PREFIX + message_len(s)) {
            s->in_len = 0; /* (the bytes stay valid through the callback) */
            set_partial(s, false);
            s->h->ops->message(s->h->owner, s, s->in + PREFIX, message_len(s));
        }
    }
    set_partial(s, s->in_len > 0 && still_open(s));
}

int sl__h2_on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud)
{
    struct sl__h2_stream *s = nghttp2_session_get_stream_user_data(ng, id);
    enum sl__grpc_status code;
    const char *bad;
    char why[128];
    size_t take;

    if (s == NULL || s->answered)
        return 0;
    if (s->streaming) {
        stream_data(s, data, len);
        return 0;
    }
    /* Never buffer more than one message's prefix and bytes plus one. */
    take = len;
    if (s->in_len + take > PREFIX + s->h->lim.max_message_bytes + 1)
        take = PREFIX + s->h->lim.max_message_bytes + 1 - s->in_len;
    if (!reserve(s->h, &s->in, &s->in_cap, s->in_len + take, true)) {
        trailers_only(s, SL__GRPC_RESOURCE_EXHAUSTED,
                      "no memory for the message (server.max_buffer_bytes)");
        return 0;
    }
    memcpy(s->in + s->in_len, data, take);
    s->in_len += take;
    if ((bad = check_message(s, why, sizeof(why), &code)) != NULL)
        trailers_only(s, code, bad);
    return 0;
}

/* The peer ended the stream: hand the call over, or refuse it. */
static void complete(struct sl__h2_stream *s)
{
    struct sl__h2_call call;
    size_t len =
        s->in_len >= PREFIX
            ? ((size_t)s->in[1] << 24 | (size_t)s->in[2] << 16 | (size_t)s->in[3] << 8 | s->in[4])
            : 0;

    if (s->in_len < PREFIX || s->in_len != PREFIX + len) {
        trailers_only(s, SL__GRPC_INTERNAL,
                      s->in_len == 0 ? "no request message" : "incomplete request message");
        return;
    }
    call.path = path_of(s);
    call.msg = s->in + PREFIX;
    call.len = len;
    call.timeout_ns = s->timeout_ns;
    call.stream = false;
    set_partial(s, false);
    s->busy = true;
    s->h->ops->call(s->h->owner, s, &call);
}

void sl__h2_stream_frame(struct sl__h2 *h, const nghttp2_frame *f)
{
    struct sl__h2_stream *s = nghttp2_session_get_stream_user_data(h->ng, f->hd.stream_id);

    if (s == NULL)
        return;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST && !s->answered)
        end_of_headers(s);
    if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return;
    s->ended = true;
    if (s->answered)
        return;
    if (!s->streaming)
        complete(s);
    else if (s->in_len > 0)
        stream_refuse(s, SL__GRPC_INTERNAL, "incomplete request message");
    else if (s->busy)
        s->h->ops->message(s->h->owner, s, NULL, 0); /* half-closed */
}

int sl__h2_on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error, void *ud)
{
    struct sl__h2_stream *s = nghttp2_session_get_stream_user_data(ng, id);

    if (s == NULL)
        return 0;
    s->open = false;
    set_partial(s, false);
    set_sending(s, false);
    if (s->busy && s->streaming && s->h->ops->gone != NULL) {
        s->h->ops->gone(s->h->owner, s); /* gives it back (sl__h2_release puts it) */
        return 0;
    }
    if (!s->busy)
        stream_put(s);
    return 0;
}
