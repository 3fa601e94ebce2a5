/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_stream.c - one gRPC call on an HTTP/2 stream (h2.h): its state, its
 * header fields (checked as RFC 9113 8.2 and 8.3 want a request's: names
 * lowercase tokens, values without NUL, CR or LF or surrounding
 * whitespace, the pseudo-headers known, once each, before the regular
 * fields and :method, :scheme and :path present, no connection-specific
 * field, a content-length the DATA matches; and what the call needs:
 * :method, :path, content-type, grpc-timeout), its message (the 5-byte
 * prefix, the size cap, exactly one message), the refusals the session
 * makes without its owner, and the answers, framed here: response headers
 * and OK trailers are constant HPACK blocks (static table references and
 * literals never indexed, so their bytes do not depend on the session's
 * state), Trailers-Only and a stream's trailers literals written by hand.
 *
 * A stream (ops->route) is handed over at its headers; its request
 * messages go up one by one as each is whole (the input buffer holds one
 * message at most), and its replies queue in the output buffer, which
 * goes out as the peer's windows allow until the owner's end puts the
 * trailers behind the last one. A unary reply the windows allow goes out
 * at once, headers, message and trailers, without being queued.
 *
 * A stream the owner answered is closed at the next flush (as nghttp2's
 * streams closed when their last frame left), so that the owner never
 * hears of its own ending (ops->gone) while it is still answering. Stream
 * objects are recycled with their buffers, so a warm session allocates
 * none per call. It keeps track of the replies that wait for the peer's
 * flow-control window, for the owner's write timeout
 * (sl__h2_stalled_until). It does not decode protobuf (the owner does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2_int.h"

#define PREFIX      5
#define FRAME_HDR   9
#define KEEP_BUFFER (64u << 10) /* a recycled stream keeps buffers up to this */

/* :method, :scheme, :path, :authority (h2_int.h's pseudo bits) */
#define P_METHOD    0x1
#define P_SCHEME    0x2
#define P_PATH      0x4
#define P_AUTHORITY 0x8
#define P_REQUIRED  (P_METHOD | P_SCHEME | P_PATH)

/* :status 200 (static index 8); content-type (static 31, a literal
 * without indexing) application/grpc. */
static const uint8_t reply_headers[] = {0x88, 0x0f, 0x10, 0x10, 'a', 'p', 'p', 'l', 'i', 'c',
                                        'a',  't',  'i',  'o',  'n', '/', 'g', 'r', 'p', 'c'};
/* grpc-status 0: a literal without indexing, new name. */
static const uint8_t ok_trailers[] = {0x00, 0x0b, 'g', 'r', 'p', 'c',  '-', 's',
                                      't',  'a',  't', 'u', 's', 0x01, '0'};
/* :status 405 and 415: the name indexed (8), the value a literal. */
static const uint8_t status_405[] = {0x08, 0x03, '4', '0', '5'};
static const uint8_t status_415[] = {0x08, 0x03, '4', '1', '5'};

/* Bytes of a header field name RFC 9113 allows: lowercase tchar. */
static const uint32_t name_chars[8] = {0x00000000, 0x03ff6cfa, 0xc0000000, 0x57ffffff};

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

static struct sl__h2_stream **bucket(struct sl__h2 *h, int32_t id)
{
    return &h->buckets[((uint32_t)id >> 1) & (SL__H2_BUCKETS - 1)];
}

struct sl__h2_stream *sl__h2_find(struct sl__h2 *h, int32_t id)
{
    struct sl__h2_stream *s = *bucket(h, id);

    while (s != NULL && s->id != id)
        s = s->next_hash;
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

struct sl__h2_stream *sl__h2_open(struct sl__h2 *h, int32_t id)
{
    struct sl__h2_stream *s;

    /* Streams the peer reset while their answer is being decided still
     * count, so resets cannot make room for more work than the limit. */
    if (h->n_open >= h->lim.max_concurrent_streams ||
        h->n_streams >= 2 * h->lim.max_concurrent_streams)
        return NULL;
    if ((s = h->free_streams) != NULL) {
        h->free_streams = s->next_free;
    } else {
        if ((s = calloc(1, sizeof(*s))) == NULL)
            return NULL;
        s->next_all = h->all_streams;
        h->all_streams = s;
    }
    h->n_streams++;
    h->n_open++;
    s->h = h;
    s->id = id;
    s->open = true;
    s->busy = s->answered = s->ended = s->local_done = s->closing = s->partial = false;
    s->post = s->grpc = s->path_long = s->sending = s->streaming = s->responded = false;
    s->finishing = s->trailers = s->malformed = s->regular = s->routed = false;
    s->pseudo = 0;
    s->timeout_ns = s->clen = -1;
    s->data_seen = 0;
    s->send_window = h->peer_initial_window;
    s->recv_window = SL__H2_WINDOW;
    s->path_len = 0;
    s->in_len = s->out_len = s->out_sent = s->sent_total = 0;
    s->next_hash = *bucket(h, id);
    *bucket(h, id) = s;
    set_partial(s, true);
    return s;
}

static void stream_put(struct sl__h2_stream *s)
{
    struct sl__h2 *h = s->h;

    if (s->in_cap > KEEP_BUFFER)
        give_back(h, &s->in, &s->in_cap);
    if (s->out_cap > KEEP_BUFFER)
        give_back(h, &s->out, &s->out_cap);
    s->next_free = h->free_streams;
    h->free_streams = s;
    h->n_streams--;
}

void sl__h2_close(struct sl__h2_stream *s)
{
    struct sl__h2 *h = s->h;
    struct sl__h2_stream **pp;

    if (!s->open)
        return;
    if (s->closing) {
        for (pp = &h->closing; *pp != s; pp = &(*pp)->next_closing)
            ;
        *pp = s->next_closing;
        s->closing = false;
    }
    for (pp = bucket(h, s->id); *pp != s; pp = &(*pp)->next_hash)
        ;
    *pp = s->next_hash;
    s->open = false;
    h->n_open--;
    set_partial(s, false);
    set_sending(s, false);
    if (s->busy && s->streaming && h->ops->gone != NULL) {
        h->ops->gone(h->owner, s); /* gives it back (sl__h2_release puts it) */
        return;
    }
    if (!s->busy)
        stream_put(s);
}

void sl__h2_stream_error(struct sl__h2_stream *s, uint32_t error)
{
    sl__h2_put_rst(s->h, s->id, error);
    s->local_done = true;
    sl__h2_close(s);
}

void sl__h2_close_answered(struct sl__h2 *h)
{
    struct sl__h2_stream *s;

    while ((s = h->closing) != NULL) {
        h->closing = s->next_closing;
        s->closing = false;
        sl__h2_close(s);
    }
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
    h->all_streams = h->free_streams = h->closing = NULL;
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

/* HPACK's integer with a `bits`-bit prefix, `first` its high bits. */
static size_t hpack_int(uint8_t *p, size_t v, unsigned bits, uint8_t first)
{
    size_t max = ((size_t)1 << bits) - 1, n = 1;

    if (v < max) {
        p[0] = (uint8_t)(first | v);
        return 1;
    }
    p[0] = (uint8_t)(first | max);
    for (v -= max; v >= 128; v >>= 7)
        p[n++] = (uint8_t)(v | 0x80);
    p[n++] = (uint8_t)v;
    return n;
}

/* A literal field without indexing, new name, no Huffman. */
static size_t literal(uint8_t *p, const char *name, size_t nl, const char *value, size_t vl)
{
    size_t n = 0;

    p[n++] = 0x00;
    n += hpack_int(p + n, nl, 7, 0);
    memcpy(p + n, name, nl);
    n += nl;
    n += hpack_int(p + n, vl, 7, 0);
    memcpy(p + n, value, vl);
    return n + vl;
}

/* grpc-status `code` and, when there is one, grpc-message. */
static size_t status_fields(uint8_t *p, unsigned code, const char *text, size_t tn)
{
    char status[12];
    int sn = snprintf(status, sizeof(status), "%u", code);
    size_t n = literal(p, "grpc-status", 11, status, (size_t)sn);

    if (tn > 0)
        n += literal(p + n, "grpc-message", 12, text, tn);
    return n;
}

/* Our END_STREAM was written on `s`: a request not ended yet is not
 * wanted (RST_STREAM NO_ERROR), and the stream is closed at the flush. */
static void close_at_flush(struct sl__h2_stream *s)
{
    if (s->closing)
        return;
    s->closing = true;
    s->next_closing = s->h->closing;
    s->h->closing = s;
}

static void local_end(struct sl__h2_stream *s)
{
    s->local_done = true;
    set_sending(s, false);
    if (!s->ended)
        sl__h2_put_rst(s->h, s->id, SL__H2_NO_ERROR);
    close_at_flush(s);
}

/* The session answered `s` before its end: input is ignored from here. */
static void answered(struct sl__h2_stream *s)
{
    s->answered = true;
    set_partial(s, false);
}

static void trailers_only(struct sl__h2_stream *s, enum sl__grpc_status code, const char *message)
{
    uint8_t block[sizeof(reply_headers) + 48 + 520];
    char text[512];
    size_t tn = pct_encode(message, text, sizeof(text));
    size_t n = sizeof(reply_headers);

    memcpy(block, reply_headers, n);
    n += status_fields(block + n, (unsigned)code, text, tn);
    answered(s);
    sl__h2_put_headers(s->h, s->id, block, n, SL__H2_F_END_STREAM);
    local_end(s);
}

/* Not a gRPC call: answered at its headers, and the stream stays
 * half-closed (local) until the peer ends its request (its body, if any,
 * read and dropped), so that what it sends on the stream meanwhile is
 * judged as on any open stream. */
static void http_refuse(struct sl__h2_stream *s, int status)
{
    answered(s);
    sl__h2_put_headers(s->h, s->id, status == 405 ? status_405 : status_415, sizeof(status_405),
                       SL__H2_F_END_STREAM);
    s->local_done = true;
    if (s->ended)
        close_at_flush(s);
}

/* The trailers behind the last message: OK for a unary call, the owner's
 * status for a stream. */
static void trailers(struct sl__h2_stream *s)
{
    uint8_t block[48 + sizeof(s->fin_msg) + 8];

    if (!s->streaming)
        sl__h2_put_headers(s->h, s->id, ok_trailers, sizeof(ok_trailers), SL__H2_F_END_STREAM);
    else
        sl__h2_put_headers(s->h, s->id, block,
                           status_fields(block, s->fin_code, s->fin_msg, s->fin_len),
                           SL__H2_F_END_STREAM);
    local_end(s);
}

/* Room the windows and the peer's frame size give one DATA frame. */
static int64_t data_room(const struct sl__h2_stream *s)
{
    int64_t room = s->h->send_window < s->send_window ? s->h->send_window : s->send_window;

    return room < (int64_t)s->h->peer_max_frame ? room : (int64_t)s->h->peer_max_frame;
}

void sl__h2_pump(struct sl__h2_stream *s)
{
    struct sl__h2 *h = s->h;
    int64_t room;

    if (!s->open || s->local_done || !s->responded || h->fatal)
        return;
    while (s->out_sent < s->out_len && (room = data_room(s)) > 0) {
        size_t n = s->out_len - s->out_sent;
        uint8_t *p;

        if ((int64_t)n > room)
            n = (size_t)room;
        if ((p = sl__h2_put(h, FRAME_HDR + n)) == NULL)
            return;
        sl__h2_frame_head(p, n, SL__H2_DATA, 0, s->id);
        memcpy(p + FRAME_HDR, s->out + s->out_sent, n);
        s->out_sent += n;
        s->sent_total += n;
        h->send_window -= (int64_t)n;
        s->send_window -= (int64_t)n;
    }
    if (s->out_sent < s->out_len) {
        set_sending(s, true);
        return;
    }
    set_sending(s, false); /* the trailers left are not flow-controlled */
    if (!s->streaming || s->finishing)
        trailers(s);
}

void sl__h2_pump_all(struct sl__h2 *h)
{
    for (struct sl__h2_stream *s = h->all_streams; s != NULL && h->send_window > 0; s = s->next_all)
        if (s->open && s->sending)
            sl__h2_pump(s);
}

/* Whether the owner's answer still has a stream to go to. */
static bool still_open(const struct sl__h2_stream *s)
{
    return s->open && !s->answered && !s->h->fatal;
}

void sl__h2_release(struct sl__h2 *h, struct sl__h2_stream *s)
{
    s->busy = false;
    if (!s->open)
        stream_put(s);
}

static void put_prefix(uint8_t *p, size_t len)
{
    p[0] = 0;
    p[1] = (uint8_t)(len >> 24);
    p[2] = (uint8_t)(len >> 16);
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
}

void sl__h2_reply(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    uint8_t *p, *q = NULL;

    if (!still_open(s))
        return;
    if (len > UINT32_MAX) {
        trailers_only(s, SL__GRPC_INTERNAL, "reply too large");
        return;
    }
    if ((int64_t)(PREFIX + len) > data_room(s)) { /* queued for the windows */
        if (!reserve(h, &s->out, &s->out_cap, PREFIX + len, false)) {
            trailers_only(s, SL__GRPC_INTERNAL, "reply too large");
            return;
        }
        put_prefix(s->out, len);
        memcpy(s->out + PREFIX, msg, len);
        s->out_len = PREFIX + len;
        s->out_sent = 0;
        answered(s);
        s->responded = true;
        sl__h2_put_headers(h, s->id, reply_headers, sizeof(reply_headers), 0);
        sl__h2_pump(s);
        return;
    }
    answered(s);
    s->responded = true;
    if (h->table_update || s->streaming) { /* a table size update first; a stream's trailers */
        sl__h2_put_headers(h, s->id, reply_headers, sizeof(reply_headers), 0);
        if ((p = sl__h2_put(h, FRAME_HDR + PREFIX + len)) == NULL)
            return;
        sl__h2_frame_head(p, PREFIX + len, SL__H2_DATA, 0, s->id);
    } else { /* the three frames at once: one reservation, constant blocks */
        if ((p = sl__h2_put(h, 3 * FRAME_HDR + sizeof(reply_headers) + PREFIX + len +
                                   sizeof(ok_trailers))) == NULL)
            return;
        sl__h2_frame_head(p, sizeof(reply_headers), SL__H2_HEADERS, SL__H2_F_END_HEADERS, s->id);
        memcpy(p + FRAME_HDR, reply_headers, sizeof(reply_headers));
        p += FRAME_HDR + sizeof(reply_headers);
        sl__h2_frame_head(p, PREFIX + len, SL__H2_DATA, 0, s->id);
        q = p + FRAME_HDR + PREFIX + len;
        sl__h2_frame_head(q, sizeof(ok_trailers), SL__H2_HEADERS,
                          SL__H2_F_END_HEADERS | SL__H2_F_END_STREAM, s->id);
        memcpy(q + FRAME_HDR, ok_trailers, sizeof(ok_trailers));
    }
    put_prefix(p + FRAME_HDR, len);
    if (len >= 16 && len <= 32) { /* an answer's usual size: two overlapping copies, no call */
        memcpy(p + FRAME_HDR + PREFIX, msg, 16);
        memcpy(p + FRAME_HDR + PREFIX + len - 16, msg + len - 16, 16);
    } else {
        memcpy(p + FRAME_HDR + PREFIX, msg, len);
    }
    s->sent_total += PREFIX + len;
    h->send_window -= (int64_t)(PREFIX + len);
    s->send_window -= (int64_t)(PREFIX + len);
    if (q != NULL)
        local_end(s);
    else
        trailers(s);
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
    put_prefix(s->out + left, len);
    memcpy(s->out + left + PREFIX, msg, len);
    s->out_len = left + PREFIX + len;
    return true;
}

/* The response headers go first. */
static void respond(struct sl__h2_stream *s)
{
    if (s->responded)
        return;
    s->responded = true;
    sl__h2_put_headers(s->h, s->id, reply_headers, sizeof(reply_headers), 0);
}

bool sl__h2_send(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    if (!still_open(s) || !s->streaming || !queue_message(s, msg, len))
        return false;
    respond(s);
    sl__h2_pump(s);
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
    sl__h2_pump(s);
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
        sl__h2_terminate(h, SL__H2_ENHANCE_YOUR_CALM);
    return until;
}

/* ------------------------------------------------------------ requests */

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

/* content-length: digits only (at most 18), or -2 when malformed. */
static int64_t parse_length(const uint8_t *v, size_t len)
{
    int64_t n = 0;

    if (len == 0 || len > 18)
        return -2;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -2;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

/* name[0..len) is the literal `want`: lengths compared first, no strlen. */
#define IS(name, len, want) ((len) == sizeof(want) - 1 && memcmp(name, want, sizeof(want) - 1) == 0)

static bool grpc_content_type(const uint8_t *v, size_t len)
{
    return len >= 16 && memcmp(v, "application/grpc", 16) == 0 &&
           (len == 16 || v[16] == '+' || v[16] == ';');
}

static bool name_ok(const uint8_t *n, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!(name_chars[n[i] >> 5] >> (n[i] & 31) & 1))
            return false;
    return true;
}

/* Whether a byte of x is 0 (exact for "any": the borrow cannot make a
 * byte above a zero one look zero unless there is a zero one). */
#define ONES           0x0101010101010101ull
#define ZERO_BYTE(x)   (((x)-ONES) & ~(x) & (ONES << 7))
#define HAS_BYTE(x, b) ZERO_BYTE((x) ^ (ONES * (b)))

#define BAD_BYTES(x) (ZERO_BYTE(x) | HAS_BYTE(x, '\n') | HAS_BYTE(x, '\r'))

/* RFC 9113 8.2.1: no NUL, CR or LF, no whitespace at either end. Eight
 * bytes at a time, the last eight (or two fours) overlapping what came
 * before: values are most of a request's header bytes. */
static bool value_ok(const uint8_t *v, size_t len)
{
    uint64_t x, bad = 0;

    if (len == 0)
        return true;
    if (v[0] == ' ' || v[0] == '\t' || v[len - 1] == ' ' || v[len - 1] == '\t')
        return false;
    if (len >= 8) {
        for (size_t i = 0; i + 8 < len; i += 8) {
            memcpy(&x, v + i, 8);
            bad |= BAD_BYTES(x);
        }
        memcpy(&x, v + len - 8, 8);
        return (bad | BAD_BYTES(x)) == 0;
    }
    if (len >= 4) {
        uint32_t a, b;

        memcpy(&a, v, 4);
        memcpy(&b, v + len - 4, 4);
        x = (uint64_t)a << 32 | b;
        return BAD_BYTES(x) == 0;
    }
    for (size_t i = 0; i < len; i++)
        bad |= v[i] == 0 || v[i] == '\n' || v[i] == '\r';
    return bad == 0;
}

/* A pseudo-header of a request: false when it is not one or repeated. */
static bool pseudo(struct sl__h2_stream *s, const uint8_t *name, size_t nl, const uint8_t *value,
                   size_t vl)
{
    uint8_t bit;

    if (IS(name, nl, ":method"))
        bit = P_METHOD;
    else if (IS(name, nl, ":path"))
        bit = P_PATH;
    else if (IS(name, nl, ":scheme"))
        bit = P_SCHEME;
    else if (IS(name, nl, ":authority"))
        bit = P_AUTHORITY;
    else
        return false;
    if (s->pseudo & bit)
        return false;
    s->pseudo |= bit;
    if (bit == P_METHOD) {
        s->post = IS(value, vl, "POST");
    } else if (bit == P_PATH) {
        if (vl == 0)
            return false;
        s->path_long = vl > sizeof(s->path);
        s->path_len = s->path_long ? 0 : (uint16_t)vl;
        memcpy(s->path, value, s->path_len);
    }
    return true;
}

void sl__h2_field(struct sl__h2_stream *s, const uint8_t *name, size_t nl, const uint8_t *value,
                  size_t vl)
{
    if (s->answered || s->malformed)
        return;
    if (nl == 0 || !value_ok(value, vl)) {
        s->malformed = true;
        return;
    }
    if (name[0] == ':') {
        if (s->trailers || s->regular || !pseudo(s, name, nl, value, vl))
            s->malformed = true;
        return;
    }
    s->regular = true;
    /* Names the call reads, or a request must not carry: compared whole,
     * so they need no check byte by byte. */
    switch (nl) {
    case 2:
        if (!IS(name, nl, "te"))
            break;
        s->malformed = !IS(value, vl, "trailers");
        return;
    case 7:
        if (!IS(name, nl, "upgrade"))
            break;
        s->malformed = true;
        return;
    case 10:
        if (IS(name, nl, "user-agent"))
            return;
        if (!IS(name, nl, "connection") && !IS(name, nl, "keep-alive"))
            break;
        s->malformed = true;
        return;
    case 12:
        if (IS(name, nl, "content-type")) {
            s->grpc = s->trailers ? s->grpc : grpc_content_type(value, vl);
            return;
        }
        if (IS(name, nl, "grpc-timeout")) {
            s->timeout_ns = s->trailers ? s->timeout_ns : parse_timeout(value, vl);
            return;
        }
        break;
    case 14:
        if (!IS(name, nl, "content-length"))
            break;
        if (!s->trailers) {
            int64_t n = parse_length(value, vl);

            s->malformed = n < 0 || (s->clen >= 0 && s->clen != n);
            s->clen = n;
        }
        return;
    case 16:
        if (!IS(name, nl, "proxy-connection"))
            break;
        s->malformed = true;
        return;
    case 17:
        if (!IS(name, nl, "transfer-encoding"))
            break;
        s->malformed = true;
        return;
    default:
        break;
    }
    s->malformed = !name_ok(name, nl);
}

void sl__h2_head_save(const struct sl__h2_stream *s, struct sl__h2_head *head)
{
    head->post = s->post;
    head->grpc = s->grpc;
    head->path_long = s->path_long;
    head->regular = s->regular;
    head->pseudo = s->pseudo;
    head->routed = s->routed;
    head->route = s->route;
    head->path_len = s->path_len;
    head->timeout_ns = s->timeout_ns;
    head->clen = s->clen;
    memcpy(head->path, s->path, s->path_len);
}

void sl__h2_head_load(struct sl__h2_stream *s, const struct sl__h2_head *head)
{
    s->post = head->post;
    s->grpc = head->grpc;
    s->path_long = head->path_long;
    s->regular = head->regular;
    s->pseudo = head->pseudo;
    s->routed = head->routed;
    s->route = head->route;
    s->path_len = head->path_len;
    s->timeout_ns = head->timeout_ns;
    s->clen = head->clen;
    memcpy(s->path, head->path, head->path_len);
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
    if (!s->routed) {
        s->route = ops->route != NULL ? ops->route(s->h->owner, path_of(s)) : 0;
        s->routed = true;
        if (s->h->cache_s == s) { /* its block was cached: the route goes with it */
            s->h->cache.head.routed = true;
            s->h->cache.head.route = s->route;
        }
    }
    if (!(s->route & SL__H2_ROUTE_STREAM) || ops->message == NULL)
        return;
    s->streaming = true;
    set_partial(s, false); /* from now on, only while a message is half there */
    call = (struct sl__h2_call){path_of(s), NULL, 0, s->timeout_ns, true, s->route};
    s->busy = true;
    ops->call(s->h->owner, s, &call);
}

/* The length in a message's 5-byte prefix at p. */
static size_t prefix_len(const uint8_t *p)
{
    return (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
}

static size_t message_len(const struct sl__h2_stream *s)
{
    return prefix_len(s->in);
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

/* A unary call's bytes: never more than one message's prefix and bytes
 * plus one are kept. */
static void unary_data(struct sl__h2_stream *s, const uint8_t *data, size_t len)
{
    enum sl__grpc_status code;
    const char *bad;
    char why[128];

    if (s->in_len + len > PREFIX + s->h->lim.max_message_bytes + 1)
        len = PREFIX + s->h->lim.max_message_bytes + 1 - s->in_len;
    if (!reserve(s->h, &s->in, &s->in_cap, s->in_len + len, true)) {
        trailers_only(s, SL__GRPC_RESOURCE_EXHAUSTED,
                      "no memory for the message (server.max_buffer_bytes)");
        return;
    }
    memcpy(s->in + s->in_len, data, len);
    s->in_len += len;
    if ((bad = check_message(s, why, sizeof(why), &code)) != NULL)
        trailers_only(s, code, bad);
}

/* A unary call's whole message msg[0..len) goes to the owner. */
static void hand_over(struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    struct sl__h2_call call;

    call.path = path_of(s);
    call.msg = msg;
    call.len = len;
    call.timeout_ns = s->timeout_ns;
    call.stream = false;
    call.route = s->route;
    set_partial(s, false);
    s->busy = true;
    s->h->ops->call(s->h->owner, s, &call);
}

/* The peer ended the stream with a whole unary call: hand it over, or
 * refuse it. */
static void complete(struct sl__h2_stream *s)
{
    size_t len = s->in_len >= PREFIX ? message_len(s) : 0;

    if (s->in_len < PREFIX || s->in_len != PREFIX + len) {
        trailers_only(s, SL__GRPC_INTERNAL,
                      s->in_len == 0 ? "no request message" : "incomplete request message");
        return;
    }
    hand_over(s, s->in + PREFIX, len);
}

/* The peer sent END_STREAM (its content-length checked). */
static void peer_end(struct sl__h2_stream *s)
{
    s->ended = true;
    if (s->clen >= 0 && s->data_seen != s->clen) {
        sl__h2_stream_error(s, SL__H2_PROTOCOL_ERROR);
        return;
    }
    if (s->answered) {
        if (s->local_done)
            close_at_flush(s); /* (refused at its headers) */
        return;
    }
    if (!s->streaming)
        complete(s);
    else if (s->in_len > 0)
        stream_refuse(s, SL__GRPC_INTERNAL, "incomplete request message");
    else if (s->busy)
        s->h->ops->message(s->h->owner, s, NULL, 0); /* half-closed */
}

void sl__h2_headers_end(struct sl__h2_stream *s, bool end_stream)
{
    if (s->trailers) {
        s->trailers = false;
        if (s->malformed)
            sl__h2_stream_error(s, SL__H2_PROTOCOL_ERROR);
        else
            peer_end(s);
        return;
    }
    if (s->malformed || (s->pseudo & P_REQUIRED) != P_REQUIRED) {
        sl__h2_stream_error(s, SL__H2_PROTOCOL_ERROR); /* a malformed request */
        return;
    }
    if (end_stream && s->clen > 0) {
        sl__h2_stream_error(s, SL__H2_PROTOCOL_ERROR); /* a length without its bytes */
        return;
    }
    s->ended = end_stream; /* (an answer made now needs no RST_STREAM) */
    end_of_headers(s);
    if (end_stream)
        peer_end(s);
}

void sl__h2_data(struct sl__h2_stream *s, const uint8_t *data, size_t len, bool end_stream)
{
    s->data_seen += (int64_t)len;
    if (s->clen >= 0 && s->data_seen > s->clen) {
        sl__h2_stream_error(s, SL__H2_PROTOCOL_ERROR);
        return;
    }
    /* A unary call whose one frame is its whole request, as clients send
     * it: handed over from the frame itself, not copied (what unary_data,
     * peer_end and complete would find good). */
    if (end_stream && !s->streaming && !s->answered && s->in_len == 0 && len >= PREFIX &&
        data[0] == 0 && prefix_len(data) == len - PREFIX &&
        len - PREFIX <= s->h->lim.max_message_bytes && (s->clen < 0 || s->data_seen == s->clen)) {
        s->ended = true;
        hand_over(s, data + PREFIX, len - PREFIX);
        return;
    }
    if (len > 0 && !s->answered) {
        if (s->streaming)
            stream_data(s, data, len);
        else
            unary_data(s, data, len);
    }
    if (end_stream && s->open)
        peer_end(s);
}
