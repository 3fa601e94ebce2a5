/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2.c - one HTTP/2 server session, framed by hand, bytes in and bytes
 * out (h2.h): the preface, whole-frame parsing with RFC 9113's connection
 * and stream errors, SETTINGS, PING, flow control both ways, the budget
 * of frames that cost the server without a call, header blocks (HEADERS
 * and CONTINUATION) decoded by nghttp2's HPACK inflater under the budget
 * of decoded header bytes, GOAWAY, and the output buffer.
 *
 * Input is read in whole frames only, so an incomplete frame stays in the
 * connection's buffer where the core's read timeout and frame cap see it;
 * a frame whose header announces more than the maximum frame size ends
 * the session at once (FRAME_SIZE_ERROR).
 *
 * HPACK makes decoding cost more than reading: a one-byte reference to a
 * dynamic table entry of 4 KB is a 4 KB field to validate and hand over.
 * So decoded header bytes are limited twice, as RFC 9113 counts them
 * (name, value and 32 bytes each): per header list
 * (SETTINGS_MAX_HEADER_LIST_SIZE, which the peer was told) and per second
 * (lim.max_header_bytes_per_s, HPACK_BURST_DIV-th of it at once, but
 * never less than HPACK_BURST_LISTS lists of the largest size).
 * Past either, decoding stops in the middle of the header block, and the
 * session ends with GOAWAY ENHANCE_YOUR_CALM after answering the calls it
 * had already taken (sl__h2_calm). A header block's compressed bytes are
 * capped as well (BLOCK_MAX), for what decodes to nothing (table size
 * updates) and for CONTINUATION floods.
 *
 * It does not parse header fields or messages (h2_stream.c) and does no
 * I/O.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h2_int.h"

#define PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define PREFACE_LEN 24
#define FRAME_HDR   9
#define MAX_FRAME   16384 /* our SETTINGS_MAX_FRAME_SIZE: the default, never raised */
#define FLOOD_BURST 1000  /* frames without a call accepted at once ... */
#define FLOOD_PER_S 1000  /* ... and per second after that */
/* At once a session may cost 1/HPACK_BURST_DIV of a second's decoded
 * header bytes (4 MiB by default: a hundred concurrent calls' lists many
 * times over), and at least HPACK_BURST_LISTS lists of the largest size.
 * Validating a decoded byte costs about 0.7 ns, so the default 256 MiB a
 * second bounds a connection's header work to a fifth of a core, less
 * than a client sending ordinary calls as fast as it can costs. */
#define HPACK_BURST_DIV   64
#define HPACK_BURST_LISTS 4
#define OUT_KEEP          (256u << 10)        /* a flushed output buffer above this is freed */
#define UPDATE_AT         (SL__H2_WINDOW / 2) /* WINDOW_UPDATE once half the window is used */

/* RFC 9113's settings identifiers (and RFC 9218's). */
#define SET_HEADER_TABLE_SIZE      0x1
#define SET_ENABLE_PUSH            0x2
#define SET_MAX_CONCURRENT_STREAMS 0x3
#define SET_INITIAL_WINDOW_SIZE    0x4
#define SET_MAX_FRAME_SIZE         0x5
#define SET_MAX_HEADER_LIST_SIZE   0x6
#define SET_NO_RFC7540_PRIORITIES  0x9

static int64_t coarse_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The budgets' clock: the owner's (sl__h2_clock), else the system's; never
 * before `last` (the two may differ by a tick). */
static int64_t mono_ms(const struct sl__h2 *h, int64_t last)
{
    int64_t now = h->own_clock ? h->clock_ms : coarse_ms();

    return now > last ? now : last;
}

void sl__h2_clock(struct sl__h2 *h, int64_t now_ms)
{
    h->clock_ms = now_ms;
    h->own_clock = true;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4); /* one load, not four */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return v;
#else
    return __builtin_bswap32(v);
#endif
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ------------------------------------------------------------ output */

uint8_t *sl__h2_put(struct sl__h2 *h, size_t n)
{
    uint8_t *p;

    if (h->out_len + n > h->out_cap) {
        size_t cap = h->out_cap ? h->out_cap : 16384;

        while (cap < h->out_len + n)
            cap *= 2;
        p = realloc(h->out, cap);
        if (p == NULL) {
            h->fatal = true; /* nothing more can be said */
            return NULL;
        }
        h->out = p;
        h->out_cap = cap;
    }
    p = h->out + h->out_len;
    h->out_len += n;
    return p;
}

void sl__h2_put_headers(struct sl__h2 *h, int32_t id, const uint8_t *block, size_t len,
                        uint8_t flags)
{
    size_t extra = h->table_update; /* a dynamic table size update to 0, first */
    uint8_t *p = sl__h2_put(h, FRAME_HDR + extra + len);

    if (p == NULL)
        return;
    sl__h2_frame_head(p, extra + len, SL__H2_HEADERS, flags | SL__H2_F_END_HEADERS, id);
    if (extra) {
        p[FRAME_HDR] = 0x20;
        h->table_update = false;
        h->table_zero = true;
    }
    memcpy(p + FRAME_HDR + extra, block, len);
}

/* A frame whose payload is one 32-bit word (RST_STREAM, WINDOW_UPDATE). */
static void put_word_frame(struct sl__h2 *h, uint8_t type, int32_t id, uint32_t word)
{
    uint8_t *p = sl__h2_put(h, FRAME_HDR + 4);

    if (p == NULL)
        return;
    sl__h2_frame_head(p, 4, type, 0, id);
    put32(p + FRAME_HDR, word);
}

void sl__h2_put_rst(struct sl__h2 *h, int32_t id, uint32_t error)
{
    put_word_frame(h, SL__H2_RST_STREAM, id, error);
}

static void put_window_update(struct sl__h2 *h, int32_t id, uint32_t n)
{
    put_word_frame(h, SL__H2_WINDOW_UPDATE, id, n);
}

static void put_goaway(struct sl__h2 *h, int32_t last, uint32_t error)
{
    uint8_t *p = sl__h2_put(h, FRAME_HDR + 8);

    h->goaway = true;
    h->goaway_last = last;
    if (p == NULL)
        return;
    sl__h2_frame_head(p, 8, SL__H2_GOAWAY, 0, 0);
    put32(p + FRAME_HDR, (uint32_t)last);
    put32(p + FRAME_HDR + 4, error);
}

static void put_settings(struct sl__h2 *h)
{
    const uint32_t iv[][2] = {
        {SET_MAX_CONCURRENT_STREAMS, h->lim.max_concurrent_streams},
        {SET_MAX_HEADER_LIST_SIZE, (uint32_t)h->lim.max_header_list_bytes},
        {SET_ENABLE_PUSH, 0},
        {SET_NO_RFC7540_PRIORITIES, 1},
    };
    size_t n = sizeof(iv) / sizeof(iv[0]);
    uint8_t *p = sl__h2_put(h, FRAME_HDR + 6 * n);

    if (p == NULL)
        return;
    sl__h2_frame_head(p, 6 * n, SL__H2_SETTINGS, 0, 0);
    for (size_t i = 0; i < n; i++) {
        p[FRAME_HDR + 6 * i] = (uint8_t)(iv[i][0] >> 8);
        p[FRAME_HDR + 6 * i + 1] = (uint8_t)iv[i][0];
        put32(p + FRAME_HDR + 6 * i + 2, iv[i][1]);
    }
}

/* ------------------------------------------------------------ budgets */

void sl__h2_terminate(struct sl__h2 *h, uint32_t error)
{
    if (h->fatal)
        return;
    put_goaway(h, h->last_id, error);
    h->fatal = true; /* its streams are closed at the flush */
}

bool sl__h2_spend(struct sl__h2 *h)
{
    int64_t now = mono_ms(h, h->budget_ms);

    h->budget += (now - h->budget_ms) * FLOOD_PER_S / 1000;
    if (h->budget > FLOOD_BURST)
        h->budget = FLOOD_BURST;
    h->budget_ms = now;
    if (h->budget <= 0) {
        sl__h2_terminate(h, SL__H2_ENHANCE_YOUR_CALM);
        return false;
    }
    h->budget--;
    return true;
}

static int64_t hpack_burst(const struct sl__h2_limits *lim)
{
    int64_t part = (int64_t)(lim->max_header_bytes_per_s / HPACK_BURST_DIV);
    int64_t lists = HPACK_BURST_LISTS * (int64_t)lim->max_header_list_bytes;

    return part > lists ? part : lists;
}

/* Refill the HPACK budget for the time since it was last refilled (none
 * is kept when there is no bound). */
static void hpack_refill(struct sl__h2 *h)
{
    int64_t now, burst = hpack_burst(&h->lim);

    if (h->lim.max_header_bytes_per_s == 0) {
        h->hpack_bytes = INT64_MAX / 2;
        return;
    }
    now = mono_ms(h, h->hpack_ms);
    if (now - h->hpack_ms >= 1000)
        h->hpack_bytes = burst; /* (no product to overflow) */
    else
        h->hpack_bytes += (now - h->hpack_ms) * (int64_t)h->lim.max_header_bytes_per_s / 1000;
    if (h->hpack_bytes > burst)
        h->hpack_bytes = burst;
    h->hpack_ms = now;
}

bool sl__h2_count_header(struct sl__h2 *h, size_t namelen, size_t valuelen)
{
    size_t bytes = namelen + valuelen + 32;

    h->list_bytes += bytes;
    h->hpack_bytes -= (int64_t)bytes;
    if (h->list_bytes <= h->lim.max_header_list_bytes && h->hpack_bytes >= 0)
        return true;
    sl__h2_calm(h);
    return false;
}

/* The highest stream id handed to the owner or answered, of the streams
 * still open: what GOAWAY covers when the session calms down. */
static int32_t last_taken(const struct sl__h2 *h)
{
    int32_t last = 0;

    for (const struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all)
        if (s->open && (s->busy || s->answered) && s->id > last)
            last = s->id;
    return last;
}

void sl__h2_calm(struct sl__h2 *h)
{
    int32_t last;

    if (h->calm || h->fatal)
        return;
    h->calm = true;
    last = last_taken(h);
    /* Streams would wait for their owners for ever: they end here. */
    sl__h2_streams_end(h, SL__GRPC_UNAVAILABLE, "the connection is closing");
    /* Streams nothing was taken from are refused below `last` and closed
     * by the GOAWAY itself above it, so the session ends once the calls
     * taken are answered. */
    for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all) {
        if (s->open && !s->busy && s->local_done && !s->closing) {
            sl__h2_put_rst(h, s->id, SL__H2_NO_ERROR); /* refused, waiting for its end */
            sl__h2_close(s);
            continue;
        }
        if (!s->open || s->busy || s->answered)
            continue;
        if (s->id < last)
            sl__h2_put_rst(h, s->id, SL__H2_REFUSED_STREAM);
        sl__h2_close(s);
    }
    put_goaway(h, last, SL__H2_ENHANCE_YOUR_CALM);
}

/* ------------------------------------------------------------ header blocks */

/* Compressed bytes one header block may take: four times what its
 * decoded list may (Huffman codes reach 30 bits a byte), and 64 KiB. */
static size_t block_max(const struct sl__h2 *h)
{
    size_t n = 4 * h->lim.max_header_list_bytes;

    return n > 65536 ? n : 65536;
}

/* Decode in[0..len) of the header block on h->cont_s (NULL: decoded for
 * HPACK's state only), `last` its last fragment. false when the session
 * ended or calmed down (decoding stopped). */
static bool inflate(struct sl__h2 *h, const uint8_t *in, size_t len, bool last)
{
    h->block_bytes += len;
    if (h->block_bytes > block_max(h)) {
        sl__h2_calm(h);
        return false;
    }
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t rv = nghttp2_hd_inflate_hd2(h->inflater, &nv, &flags, in, len, last);

        if (rv < 0) {
            sl__h2_terminate(h, rv == NGHTTP2_ERR_NOMEM ? SL__H2_INTERNAL_ERROR
                                                        : SL__H2_COMPRESSION_ERROR);
            return false;
        }
        in += rv;
        len -= (size_t)rv;
        if (flags & NGHTTP2_HD_INFLATE_EMIT) {
            if (!sl__h2_count_header(h, nv.namelen, nv.valuelen))
                return false; /* calm: h->cont_s may be gone */
            if (h->cont_s != NULL)
                sl__h2_field(h->cont_s, nv.name, nv.namelen, nv.value, nv.valuelen);
        }
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(h->inflater);
            return true;
        }
        if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && len == 0)
            return true;
    }
}

/* HPACK's integer with a `bits`-bit prefix at *p (at most 4 bytes
 * after it): false when it runs past the end. */
static bool hp_int(const uint8_t **p, const uint8_t *end, unsigned bits, uint32_t *v)
{
    uint32_t max = (1u << bits) - 1;

    if (*p >= end)
        return false;
    *v = *(*p)++ & max;
    if (*v < max)
        return true;
    for (unsigned shift = 0; shift < 28; shift += 7) {
        uint8_t b;

        if (*p >= end)
            return false;
        b = *(*p)++;
        *v += (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

static bool hp_string(const uint8_t **p, const uint8_t *end)
{
    uint32_t n;

    if (!hp_int(p, end, 7, &n) || n > (size_t)(end - *p))
        return false;
    *p += n;
    return true;
}

/* Whether a header block leaves HPACK's dynamic table as it was: only
 * indexed fields (RFC 7541 6.1) and literals without indexing or never
 * indexed (6.2.2, 6.2.3), well formed. Its representations are walked,
 * not decoded (the inflater decodes). */
static bool clean_block(const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint32_t index;

    while (p < end) {
        if (*p & 0x80) {
            if (!hp_int(&p, end, 7, &index) || index == 0)
                return false;
            continue;
        }
        if (*p & 0xe0)
            return false; /* incremental indexing, or a table size update */
        if (!hp_int(&p, end, 4, &index) || (index == 0 && !hp_string(&p, end)) ||
            !hp_string(&p, end))
            return false;
    }
    return true;
}

/* The block p[0..len) is the cached one, decoded when the table was as it
 * is: its call's state goes to `s` without decoding, counted as it was. */
static bool cache_hit(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *p, size_t len)
{
    const struct sl__h2_block_cache *c = &h->cache;

    if (!c->valid || c->gen != h->table_gen || c->len != len || memcmp(c->block, p, len) != 0 ||
        h->hpack_bytes < (int64_t)c->list_bytes)
        return false;
    h->list_bytes = c->list_bytes;
    h->hpack_bytes -= (int64_t)c->list_bytes;
    sl__h2_head_load(s, &c->head);
    h->cache_s = s; /* (a route not asked yet goes to the cache too) */
    return true;
}

/* A whole header block p[0..len) was decoded for `s` (NULL: refused or
 * ignored): the table's generation moves unless it left the table as it
 * was, and a request's clean block is cached. */
static void cache_after(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *p, size_t len)
{
    struct sl__h2_block_cache *c = &h->cache;

    if (!clean_block(p, len)) {
        h->table_gen++;
        return;
    }
    if (s == NULL || s->trailers || s->malformed || s->answered || len > SL__H2_CACHE_BLOCK)
        return;
    c->valid = true;
    c->gen = h->table_gen;
    c->len = (uint16_t)len;
    c->list_bytes = h->list_bytes;
    memcpy(c->block, p, len);
    sl__h2_head_save(s, &c->head); /* (its route follows at the block's end) */
    h->cache_s = s;
}

/* The header block is complete: its stream acts on it. */
static void block_end(struct sl__h2 *h)
{
    struct sl__h2_stream *s = h->cont_s;

    h->cont_id = 0;
    h->cont_s = NULL;
    if (s != NULL)
        sl__h2_headers_end(s, h->cont_end_stream);
}

/* ------------------------------------------------------------ frames */

/* The payload of a PADDED frame without its padding: false (a connection
 * error) when the padding is longer than the frame. */
static inline __attribute__((always_inline)) bool unpad(struct sl__h2 *h, uint8_t flags,
                                                        const uint8_t **p, size_t *len)
{
    size_t pad;

    if (!(flags & SL__H2_F_PADDED))
        return true;
    if (*len < 1 || (pad = (*p)[0]) >= *len) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    *p += 1;
    *len -= 1 + pad;
    return true;
}

/* A stream error on a stream that may have no object. */
static void stream_error(struct sl__h2 *h, int32_t id, uint32_t error)
{
    struct sl__h2_stream *s = sl__h2_find(h, id);

    sl__h2_spend(h); /* refused frames cost too */
    if (s != NULL)
        sl__h2_stream_error(s, error);
    else
        sl__h2_put_rst(h, id, error);
}

static bool on_headers(struct sl__h2 *h, uint8_t flags, int32_t id, const uint8_t *p, size_t len)
{
    struct sl__h2_stream *s = NULL;
    uint32_t error = 0; /* a stream error, once the fragment is decoded */

    if (id == 0 || (id & 1) == 0) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (!unpad(h, flags, &p, &len))
        return false;
    if (flags & SL__H2_F_PRIORITY) {
        if (len < 5) {
            sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
            return false;
        }
        if ((int32_t)(get32(p) & 0x7fffffff) == id)
            error = SL__H2_PROTOCOL_ERROR; /* a stream cannot depend on itself */
        p += 5;
        len -= 5;
    }
    if (!h->hpack_refilled) {
        hpack_refill(h);
        h->hpack_refilled = true;
    }
    h->list_bytes = 0; /* every header block is a header list of its own */
    h->block_bytes = 0;
    h->cache_s = NULL;
    if (id > h->last_id) { /* a new stream */
        h->last_id = id;
        if (!h->goaway && error == 0 && (s = sl__h2_open(h, id)) == NULL)
            error = SL__H2_REFUSED_STREAM; /* (after a GOAWAY: ignored) */
    } else if ((s = sl__h2_find(h, id)) == NULL) {
        sl__h2_terminate(h, SL__H2_STREAM_CLOSED); /* HEADERS on a closed stream */
        return false;
    } else if (s->ended) {
        error = SL__H2_STREAM_CLOSED; /* half-closed (remote) */
    } else if (!(flags & SL__H2_F_END_STREAM)) {
        error = SL__H2_PROTOCOL_ERROR; /* trailers that do not end the request */
    } else if (error == 0) {
        s->trailers = true;
        s->malformed = false;
    }
    if (error != 0)
        s = NULL; /* the block is decoded for HPACK's state only */
    h->cont_id = id;
    h->cont_s = s;
    h->cont_end_stream = flags & SL__H2_F_END_STREAM;
    if (!(flags & SL__H2_F_END_HEADERS)) {
        h->table_gen++; /* (blocks in fragments are not looked at) */
        if (!inflate(h, p, len, false))
            return false;
    } else if (s == NULL || s->trailers || !cache_hit(h, s, p, len)) {
        if (!inflate(h, p, len, true))
            return false;
        cache_after(h, s, p, len);
    }
    if (error == SL__H2_REFUSED_STREAM)
        sl__h2_put_rst(h, id, error); /* not a frame that costs: the limit's refusal */
    else if (error != 0)
        stream_error(h, id, error);
    if (flags & SL__H2_F_END_HEADERS)
        block_end(h);
    return !h->fatal && !h->calm;
}

static bool on_continuation(struct sl__h2 *h, uint8_t flags, int32_t id, const uint8_t *p,
                            size_t len)
{
    if (len == 0 && !(flags & SL__H2_F_END_HEADERS) && !sl__h2_spend(h))
        return false;
    if (!inflate(h, p, len, flags & SL__H2_F_END_HEADERS))
        return false;
    if (flags & SL__H2_F_END_HEADERS)
        block_end(h);
    return !h->fatal && !h->calm;
}

static bool on_data(struct sl__h2 *h, uint8_t flags, int32_t id, const uint8_t *p, size_t len)
{
    size_t flen = len;
    struct sl__h2_stream *s;

    if (id == 0 || id > h->last_id) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR); /* on stream 0, or an idle stream */
        return false;
    }
    if ((int64_t)flen > h->recv_window) {
        sl__h2_terminate(h, SL__H2_FLOW_CONTROL_ERROR);
        return false;
    }
    h->recv_window -= (int64_t)flen;
    if (h->recv_window <= SL__H2_WINDOW - UPDATE_AT) {
        put_window_update(h, 0, (uint32_t)(SL__H2_WINDOW - h->recv_window));
        h->recv_window = SL__H2_WINDOW;
    }
    if (!unpad(h, flags, &p, &len))
        return false;
    if (len == 0 && !(flags & SL__H2_F_END_STREAM) && !sl__h2_spend(h))
        return false;
    s = sl__h2_find(h, id);
    if (s == NULL || s->ended) {
        stream_error(h, id, SL__H2_STREAM_CLOSED);
        return !h->fatal;
    }
    if ((int64_t)flen > s->recv_window) {
        stream_error(h, id, SL__H2_FLOW_CONTROL_ERROR);
        return !h->fatal;
    }
    s->recv_window -= (int64_t)flen;
    if (!(flags & SL__H2_F_END_STREAM) && s->recv_window <= SL__H2_WINDOW - UPDATE_AT &&
        (!s->answered || s->local_done)) { /* (a body after a refusal is read to its end) */
        put_window_update(h, id, (uint32_t)(SL__H2_WINDOW - s->recv_window));
        s->recv_window = SL__H2_WINDOW;
    }
    sl__h2_data(s, p, len, flags & SL__H2_F_END_STREAM);
    return !h->fatal;
}

static bool on_priority(struct sl__h2 *h, int32_t id, const uint8_t *p, size_t len)
{
    if (id == 0) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (!sl__h2_spend(h))
        return false;
    if (len != 5)
        stream_error(h, id, SL__H2_FRAME_SIZE_ERROR);
    else if ((int32_t)(get32(p) & 0x7fffffff) == id)
        stream_error(h, id, SL__H2_PROTOCOL_ERROR);
    return !h->fatal;
}

static bool on_rst_stream(struct sl__h2 *h, int32_t id, size_t len)
{
    struct sl__h2_stream *s;

    if (id == 0 || id > h->last_id) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (len != 4) {
        sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
        return false;
    }
    if (!sl__h2_spend(h))
        return false;
    if ((s = sl__h2_find(h, id)) != NULL) {
        s->local_done = true; /* nothing more is sent on it */
        sl__h2_close(s);
    }
    return true;
}

/* One setting of the peer's: false on a connection error. */
static bool setting(struct sl__h2 *h, uint16_t id, uint32_t v)
{
    switch (id) {
    case SET_HEADER_TABLE_SIZE:
        if (v < 4096 && !h->table_zero)
            h->table_update = true; /* we index nothing: the table goes to 0 */
        return true;
    case SET_ENABLE_PUSH:
    case SET_NO_RFC7540_PRIORITIES:
        if (v > 1) {
            sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
            return false;
        }
        return true;
    case SET_INITIAL_WINDOW_SIZE: {
        int64_t delta = (int64_t)v - h->peer_initial_window;

        if (v > SL__H2_WINDOW_MAX) {
            sl__h2_terminate(h, SL__H2_FLOW_CONTROL_ERROR);
            return false;
        }
        for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all) {
            if (!s->open)
                continue;
            s->send_window += delta;
            if (s->send_window > SL__H2_WINDOW_MAX) {
                sl__h2_terminate(h, SL__H2_FLOW_CONTROL_ERROR);
                return false;
            }
        }
        h->peer_initial_window = v;
        return true;
    }
    case SET_MAX_FRAME_SIZE:
        if (v < 16384 || v > 16777215) {
            sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
            return false;
        }
        h->peer_max_frame = v;
        return true;
    default: /* MAX_CONCURRENT_STREAMS (we open none), MAX_HEADER_LIST_SIZE, unknown */
        return true;
    }
}

static bool on_settings(struct sl__h2 *h, uint8_t flags, int32_t id, const uint8_t *p, size_t len)
{
    uint8_t *ack;

    if (id != 0) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (flags & SL__H2_F_ACK) {
        if (len != 0) {
            sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
            return false;
        }
        return true;
    }
    if (len % 6 != 0) {
        sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
        return false;
    }
    if (!sl__h2_spend(h))
        return false;
    for (size_t i = 0; i < len; i += 6)
        if (!setting(h, (uint16_t)(p[i] << 8 | p[i + 1]), get32(p + i + 2)))
            return false;
    if ((ack = sl__h2_put(h, FRAME_HDR)) != NULL)
        sl__h2_frame_head(ack, 0, SL__H2_SETTINGS, SL__H2_F_ACK, 0);
    if (h->n_sending > 0)
        sl__h2_pump_all(h);
    return !h->fatal;
}

static bool on_ping(struct sl__h2 *h, uint8_t flags, int32_t id, const uint8_t *p, size_t len)
{
    uint8_t *pong;

    if (id != 0) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (len != 8) {
        sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
        return false;
    }
    if (flags & SL__H2_F_ACK)
        return true;
    if (!sl__h2_spend(h))
        return false;
    if ((pong = sl__h2_put(h, FRAME_HDR + 8)) != NULL) {
        sl__h2_frame_head(pong, 8, SL__H2_PING, SL__H2_F_ACK, 0);
        memcpy(pong + FRAME_HDR, p, 8);
    }
    return !h->fatal;
}

static bool on_window_update(struct sl__h2 *h, int32_t id, const uint8_t *p, size_t len)
{
    uint32_t n;
    struct sl__h2_stream *s;

    if (len != 4) {
        sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
        return false;
    }
    n = get32(p) & 0x7fffffff;
    if (id == 0) {
        if (n == 0 || h->send_window + n > SL__H2_WINDOW_MAX) {
            sl__h2_terminate(h, n == 0 ? SL__H2_PROTOCOL_ERROR : SL__H2_FLOW_CONTROL_ERROR);
            return false;
        }
        h->send_window += n;
        if (h->n_sending > 0)
            sl__h2_pump_all(h);
        return !h->fatal;
    }
    if (id > h->last_id) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR); /* an idle stream */
        return false;
    }
    if ((s = sl__h2_find(h, id)) == NULL)
        return true; /* closed: it may have been on its way */
    if (n == 0) {
        stream_error(h, id, SL__H2_PROTOCOL_ERROR);
        return !h->fatal;
    }
    if (s->send_window + n > SL__H2_WINDOW_MAX) {
        stream_error(h, id, SL__H2_FLOW_CONTROL_ERROR);
        return !h->fatal;
    }
    s->send_window += n;
    if (s->sending)
        sl__h2_pump(s);
    return !h->fatal;
}

static bool on_goaway(struct sl__h2 *h, int32_t id, size_t len)
{
    if (id != 0) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    }
    if (len < 8) {
        sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
        return false;
    }
    h->peer_goaway = true; /* it opens no more streams: done once they are over */
    return true;
}

/* One whole frame: false once nothing more is to be read. */
static bool frame(struct sl__h2 *h, const uint8_t *f, size_t len)
{
    uint8_t type = f[3], flags = f[4];
    int32_t id = (int32_t)(get32(f + 5) & 0x7fffffff);
    const uint8_t *p = f + FRAME_HDR;

    if (h->cont_id != 0 && (type != SL__H2_CONTINUATION || id != h->cont_id)) {
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR); /* a header block interrupted */
        return false;
    }
    if (!h->settings_seen) {
        if (type != SL__H2_SETTINGS || (flags & SL__H2_F_ACK)) {
            sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR); /* the preface ends with SETTINGS */
            return false;
        }
        h->settings_seen = true;
    }
    switch (type) {
    case SL__H2_DATA:
        return on_data(h, flags, id, p, len);
    case SL__H2_HEADERS:
        return on_headers(h, flags, id, p, len);
    case SL__H2_PRIORITY:
        return on_priority(h, id, p, len);
    case SL__H2_RST_STREAM:
        return on_rst_stream(h, id, len);
    case SL__H2_SETTINGS:
        return on_settings(h, flags, id, p, len);
    case SL__H2_PING:
        return on_ping(h, flags, id, p, len);
    case SL__H2_GOAWAY:
        return on_goaway(h, id, len);
    case SL__H2_WINDOW_UPDATE:
        return on_window_update(h, id, p, len);
    case SL__H2_CONTINUATION:
        if (h->cont_id == 0) {
            sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR); /* no header block to continue */
            return false;
        }
        return on_continuation(h, flags, id, p, len);
    case SL__H2_PUSH_PROMISE: /* a client never pushes */
        sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
        return false;
    default: /* extensions we do not speak: ignored, counted */
        return sl__h2_spend(h);
    }
}

/* ------------------------------------------------------------ the session */

struct sl__h2 *sl__h2_new(const struct sl__h2_limits *lim, const struct sl__h2_ops *ops,
                          void *owner)
{
    struct sl__h2 *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return NULL;
    h->lim = *lim;
    h->ops = ops;
    h->owner = owner;
    h->budget = FLOOD_BURST;
    h->budget_ms = coarse_ms();
    h->hpack_ms = h->budget_ms - 3600 * 1000; /* the first refill fills it, whichever clock */
    h->peer_initial_window = SL__H2_WINDOW;
    h->peer_max_frame = 16384;
    h->send_window = SL__H2_WINDOW;
    h->recv_window = SL__H2_WINDOW;
    sl__h2_mem_init(&h->pool, &h->mem);
    if (nghttp2_hd_inflate_new2(&h->inflater, &h->mem) != 0) {
        h->inflater = NULL;
        sl__h2_free(h);
        return NULL;
    }
    put_settings(h);
    if (h->fatal) {
        sl__h2_free(h);
        return NULL;
    }
    return h;
}

void sl__h2_free(struct sl__h2 *h)
{
    if (h == NULL)
        return;
    if (h->inflater != NULL)
        nghttp2_hd_inflate_del(h->inflater);
    sl__h2_streams_free(h);
    sl__h2_mem_destroy(&h->pool);
    free(h->out);
    free(h);
}

size_t sl__h2_feed(struct sl__h2 *h, const uint8_t *buf, size_t len)
{
    size_t off = 0;

    if (h->fatal || h->calm)
        return len; /* nothing more is read; the GOAWAY goes out */
    if (!h->preface) {
        if (memcmp(buf, PREFACE, len < PREFACE_LEN ? len : PREFACE_LEN) != 0) {
            sl__h2_terminate(h, SL__H2_PROTOCOL_ERROR);
            return len;
        }
        if (len < PREFACE_LEN)
            return 0;
        h->preface = true;
        off = PREFACE_LEN;
    }
    h->hpack_refilled = false;
    while (len - off >= FRAME_HDR) {
        size_t flen = (size_t)buf[off] << 16 | (size_t)buf[off + 1] << 8 | buf[off + 2];

        if (flen > MAX_FRAME) {
            sl__h2_terminate(h, SL__H2_FRAME_SIZE_ERROR);
            return len;
        }
        if (len - off < FRAME_HDR + flen)
            break;
        if (!frame(h, buf + off, flen))
            return len; /* the session ended, or calmed down in the middle of a frame */
        off += FRAME_HDR + flen;
    }
    return off;
}

void sl__h2_flush(struct sl__h2 *h)
{
    sl__h2_close_answered(h);
    if (h->fatal) /* nghttp2 closed every stream as its GOAWAY left: so do we */
        for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all)
            if (s->open)
                sl__h2_close(s);
    if (h->out_len > 0) {
        size_t n = h->out_len;

        h->out_len = 0;
        h->ops->send(h->owner, h->out, n);
    }
    if (h->out_cap > OUT_KEEP) {
        free(h->out);
        h->out = NULL;
        h->out_cap = 0;
    }
}

bool sl__h2_done(const struct sl__h2 *h)
{
    if (h->out_len > 0)
        return false;
    return h->fatal || ((h->goaway || h->peer_goaway) && h->n_open == 0);
}

bool sl__h2_partial(const struct sl__h2 *h)
{
    return h->n_partial > 0;
}

void sl__h2_goaway(struct sl__h2 *h)
{
    if (h->goaway || h->fatal)
        return;
    put_goaway(h, h->last_id, SL__H2_NO_ERROR);
}

uint64_t sl__h2_heap_allocs(const struct sl__h2 *h)
{
    return h->pool.heap_allocs;
}
