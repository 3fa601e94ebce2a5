/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2.c - one HTTP/2 server session on nghttp2, bytes in and bytes out
 * (h2.h): the preface and whole-frame feeding, SETTINGS, the budget of
 * frames that cost the server without a call, the budget of decoded
 * header bytes, GOAWAY, and output.
 *
 * Input is handed to nghttp2 in whole frames only, so an incomplete frame
 * stays in the connection's buffer where the core's read timeout and frame
 * cap see it; a frame whose header announces more than the maximum frame
 * size is handed over at once for nghttp2 to refuse (FRAME_SIZE_ERROR).
 * Frames nghttp2 drops without a callback (PRIORITY, which it ignores as
 * we send SETTINGS_NO_RFC7540_PRIORITIES, and unknown types) are counted
 * in the flood budget here, from their frame headers.
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
 * had already taken (sl__h2_calm).
 *
 * It does not parse headers or messages (h2_stream.c) and does no I/O.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h2_int.h"

#define PREFACE_LEN 24
#define FRAME_HDR   9
#define MAX_FRAME   16384 /* SETTINGS_MAX_FRAME_SIZE: nghttp2's default, never raised */
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
#define TYPE_PRIORITY     0x2
#define TYPE_CONTINUATION 0x9 /* the last type nghttp2 acts on for a server */

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sl__h2_terminate(struct sl__h2 *h, uint32_t error)
{
    if (!h->fatal)
        nghttp2_session_terminate_session(h->ng, error);
    h->fatal = true;
}

/* One frame that costs without a call: false once the budget is spent
 * (the session is then ended with ENHANCE_YOUR_CALM). */
static bool spend(struct sl__h2 *h)
{
    int64_t now = mono_ms();

    h->budget += (now - h->budget_ms) * FLOOD_PER_S / 1000;
    if (h->budget > FLOOD_BURST)
        h->budget = FLOOD_BURST;
    h->budget_ms = now;
    if (h->budget <= 0) {
        sl__h2_terminate(h, NGHTTP2_ENHANCE_YOUR_CALM);
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
    int64_t now = mono_ms(), burst = hpack_burst(&h->lim);

    if (h->lim.max_header_bytes_per_s == 0) {
        h->hpack_bytes = INT64_MAX / 2;
        return;
    }
    if (now - h->hpack_ms >= 1000)
        h->hpack_bytes = burst; /* (no product to overflow) */
    else
        h->hpack_bytes += (now - h->hpack_ms) * (int64_t)h->lim.max_header_bytes_per_s / 1000;
    if (h->hpack_bytes > burst)
        h->hpack_bytes = burst;
    h->hpack_ms = now;
}

int sl__h2_count_header(struct sl__h2 *h, size_t namelen, size_t valuelen)
{
    size_t bytes = namelen + valuelen + 32;

    h->list_bytes += bytes;
    h->hpack_bytes -= (int64_t)bytes;
    if (h->list_bytes <= h->lim.max_header_list_bytes && h->hpack_bytes >= 0)
        return 0;
    sl__h2_calm(h);
    return NGHTTP2_ERR_PAUSE;
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
    h->calm = h->goaway = true;
    last = last_taken(h);
    /* Streams would wait for their owners for ever: they end here. */
    sl__h2_streams_end(h, SL__GRPC_UNAVAILABLE, "the connection is closing");
    /* Streams above `last` are closed by the GOAWAY itself (nghttp2 closes
     * them as it sends it); those below that nothing was taken from are
     * refused, so the session ends once the calls taken are answered. */
    for (struct sl__h2_stream *s = h->all_streams; s != NULL; s = s->next_all)
        if (s->open && !s->busy && !s->answered && s->id < last)
            nghttp2_submit_rst_stream(h->ng, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
    nghttp2_submit_goaway(h->ng, NGHTTP2_FLAG_NONE, last, NGHTTP2_ENHANCE_YOUR_CALM, NULL, 0);
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    struct sl__h2 *h = ud;
    bool ack = f->hd.flags & NGHTTP2_FLAG_ACK;

    switch (f->hd.type) {
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PING:
        if (!ack)
            spend(h);
        break;
    case NGHTTP2_RST_STREAM:
        spend(h);
        break;
    case NGHTTP2_DATA:
        if (f->hd.length == 0 && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM) && !spend(h))
            break;
        sl__h2_stream_frame(h, f);
        break;
    case NGHTTP2_HEADERS:
        sl__h2_stream_frame(h, f);
        break;
    default:
        break;
    }
    return 0;
}

static int on_invalid_frame(nghttp2_session *ng, const nghttp2_frame *f, int error, void *ud)
{
    spend(ud); /* refused frames cost too */
    return 0;
}

static int make_callbacks(nghttp2_session_callbacks **cb)
{
    if (nghttp2_session_callbacks_new(cb) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_frame_recv_callback(*cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(*cb, on_invalid_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(*cb, sl__h2_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(*cb, sl__h2_on_header);
    nghttp2_session_callbacks_set_on_invalid_header_callback(*cb, sl__h2_on_invalid_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(*cb, sl__h2_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(*cb, sl__h2_on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(*cb, sl__h2_on_frame_send);
    return 0;
}

/* Options: floods are this file's budget (nghttp2's own reset limit would
 * answer INTERNAL_ERROR), closed streams are not kept. */
static int make_options(nghttp2_option **opt)
{
    if (nghttp2_option_new(opt) != 0)
        return -1;
    nghttp2_option_set_no_closed_streams(*opt, 1);
    nghttp2_option_set_stream_reset_rate_limit(*opt, UINT32_MAX, UINT32_MAX);
    nghttp2_option_set_max_outbound_ack(*opt, FLOOD_BURST);
    return 0;
}

static int send_settings(struct sl__h2 *h)
{
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h->lim.max_concurrent_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)h->lim.max_header_list_bytes},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    return nghttp2_submit_settings(h->ng, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
}

struct sl__h2 *sl__h2_new(const struct sl__h2_limits *lim, const struct sl__h2_ops *ops,
                          void *owner)
{
    struct sl__h2 *h = calloc(1, sizeof(*h));
    nghttp2_session_callbacks *cb = NULL;
    nghttp2_option *opt = NULL;
    int rc = -1;

    if (h == NULL)
        return NULL;
    h->lim = *lim;
    h->ops = ops;
    h->owner = owner;
    h->budget = FLOOD_BURST;
    h->budget_ms = mono_ms();
    h->hpack_ms = h->budget_ms - 1000; /* the first refill fills it */
    sl__h2_mem_init(&h->pool, &h->mem);
    if (make_callbacks(&cb) == 0 && make_options(&opt) == 0 &&
        nghttp2_session_server_new3(&h->ng, cb, h, opt, &h->mem) == 0)
        rc = send_settings(h);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);
    if (rc != 0) {
        sl__h2_free(h);
        return NULL;
    }
    return h;
}

void sl__h2_free(struct sl__h2 *h)
{
    if (h == NULL)
        return;
    nghttp2_session_del(h->ng);
    sl__h2_streams_free(h);
    sl__h2_mem_destroy(&h->pool);
    free(h);
}

/* A frame nghttp2 drops without telling us: PRIORITY, or a type it does
 * not know (extensions we do not speak). */
static bool dropped_silently(uint8_t type)
{
    return type == TYPE_PRIORITY || type > TYPE_CONTINUATION;
}

/* Bytes of buf[0..len) that form whole frames, or all of them once a
 * frame announces more than MAX_FRAME (for nghttp2 to refuse). Frames
 * nghttp2 drops silently are spent from the flood budget here; 0 once it
 * is spent (the session is ended). */
static size_t whole_frames(struct sl__h2 *h, const uint8_t *buf, size_t len)
{
    size_t off = 0;

    while (len - off >= FRAME_HDR) {
        size_t flen = (size_t)buf[off] << 16 | (size_t)buf[off + 1] << 8 | buf[off + 2];
        if (flen > MAX_FRAME)
            return len;
        if (len - off < FRAME_HDR + flen)
            break;
        if (dropped_silently(buf[off + 3]) && !spend(h))
            return 0;
        off += FRAME_HDR + flen;
    }
    return off;
}

size_t sl__h2_feed(struct sl__h2 *h, const uint8_t *buf, size_t len)
{
    size_t start = 0, n;
    ssize_t rv;

    if (h->fatal || h->calm)
        return len; /* nothing more is read; the GOAWAY goes out */
    if (!h->preface_fed) {
        if (len < PREFACE_LEN)
            return 0;
        start = PREFACE_LEN;
    }
    n = start + whole_frames(h, buf + start, len - start);
    if (h->fatal)
        return len;
    if (n == 0)
        return 0;
    hpack_refill(h);
    rv = nghttp2_session_mem_recv(h->ng, buf, n);
    if (h->calm)
        return len; /* decoding stopped in the middle of a frame: the rest is dropped */
    if (rv < 0) {
        sl__h2_terminate(h, rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM
                            : rv == NGHTTP2_ERR_NOMEM ? NGHTTP2_INTERNAL_ERROR
                                                      : NGHTTP2_PROTOCOL_ERROR);
        return len;
    }
    h->preface_fed = h->preface_fed || (size_t)rv >= PREFACE_LEN;
    return (size_t)rv; /* all of it: nghttp2 pauses only when a callback asks */
}

void sl__h2_flush(struct sl__h2 *h)
{
    const uint8_t *data;
    ssize_t n;

    while ((n = nghttp2_session_mem_send(h->ng, &data)) > 0)
        h->ops->send(h->owner, data, (size_t)n);
    if (n < 0)
        h->fatal = true; /* out of memory in nghttp2: nothing more can be said */
}

bool sl__h2_done(const struct sl__h2 *h)
{
    if (h->fatal)
        return !nghttp2_session_want_write(h->ng);
    return !nghttp2_session_want_read(h->ng) && !nghttp2_session_want_write(h->ng);
}

bool sl__h2_partial(const struct sl__h2 *h)
{
    return h->n_partial > 0;
}

void sl__h2_goaway(struct sl__h2 *h)
{
    if (h->goaway || h->fatal)
        return;
    h->goaway = true;
    nghttp2_submit_goaway(h->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h->ng),
                          NGHTTP2_NO_ERROR, NULL, 0);
}

uint64_t sl__h2_heap_allocs(const struct sl__h2 *h)
{
    return h->pool.heap_allocs;
}
