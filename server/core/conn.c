/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn.c - one client connection: reading into a reused buffer, sniffing
 * the protocol, handing whole frames to it, and writing replies in request
 * order, including replies that arrive later through reserved slots; its
 * budgets, timeouts and lifetime. The bytes move through the connection's
 * byte stream (conn_io.h: libuv's stream calls in conn_uv.c, the worker's
 * io_uring in conn_ring.c, or a transform over either); this file is the
 * layer above it (sl__conn_up_core) and the same for every back-end.
 *
 * Closing a connection that still sends (a refused request with its body
 * unread, say) lingers, as nginx's lingering_close does: close() with unread
 * input makes the kernel send RST, which can destroy the answer just written
 * (the 400 or 431 the client should read). So the connection is shut down
 * for writing once its output is flushed, its input is read and discarded
 * until EOF or SL__CONN_LINGER_MS (checked by the worker's sweep), and only
 * then closed.
 *
 * It does not parse any protocol and does not decide anything; see
 * proto-t.h for the contract with protocols and conn-t.h for the buffers.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "client_key.h"
#include "conn.h"
#include "conn_io.h"
#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "server-t.h"
#include "tls.h"
#include "worker-t.h"
#include "xalloc.h"

/* Read at least this much per call. */
#define READ_CHUNK 16384
/* A ring's receive is copied whole into the room rx_room() gives. */
_Static_assert(SL__RING_BUF_BYTES <= READ_CHUNK, "a ring buffer fits one read's room");
/* Stop reading while this much output waits for a slow reader. */
#define OUT_HIGH (4u << 20)

static void process(struct sl__conn *c);
static void flush(struct sl__conn *c);
static void drained(struct sl__conn *c);
static void maybe_free(struct sl__conn *c);
static void undirty(struct sl__conn *c);
static bool resume(struct sl__conn *c);

/* The stream's close began (or ended): nothing more may be asked of it. */
static bool closing(const struct sl__conn *c)
{
    return (c->flags & SL__CONN_CLOSE_BEGUN) != 0;
}

void sl__buf_grow(struct sl__buf *b, size_t len)
{
    size_t cap = b->cap ? b->cap : 256;

    while (cap - b->len < len)
        cap *= 2;
    b->p = sl__xrealloc(b->p, cap);
    b->cap = cap;
}

void sl__buf_appendf(struct sl__buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        sl__buf_append(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void sl__buf_json_str(struct sl__buf *b, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0, cap = 6 * n + 3, len = 0;
    struct sl__wr w;

    if (s == NULL) {
        sl__buf_append(b, "null", 4);
        return;
    }
    sl__wr_init(&w, sl__buf_room(b, cap), cap); /* room for every byte escaped */
    sl__wr_json_str(&w, s, n);
    sl__wr_finish(&w, &len);
    b->len += len;
}

void sl__buf_free(struct sl__buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ buffers */

static struct sl__metrics *metrics_of(struct sl__conn *c)
{
    return c->w->srv->metrics;
}

static void count(struct sl__conn *c, enum sl__conn_event e, uint64_t n)
{
    sl__metrics_conn_event(metrics_of(c), c->w->id, e, n);
}

/* Bring the server's buffer budget up to date with what c holds. */
static void account(struct sl__conn *c)
{
    int64_t held =
        (int64_t)(c->in.cap + c->out.cap + c->inflight.cap + c->held.cap + c->slotdata.cap) +
        c->proto_bytes + c->stream_bytes;

    if (held != c->accounted) {
        atomic_fetch_add_explicit(&c->w->srv->buffer_bytes, held - c->accounted,
                                  memory_order_relaxed);
        c->accounted = held;
    }
}

/* Give back a buffer that grew for a large frame, keeping its bytes. */
static void shrink(struct sl__conn *c, struct sl__buf *b, size_t floor)
{
    size_t keep = b->len > floor ? b->len : floor;

    if (b->cap <= SL__CONN_SMALL_BYTES || keep > SL__CONN_SMALL_BYTES / 2)
        return;
    if (keep == 0) {
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    } else {
        b->p = sl__xrealloc(b->p, keep);
        b->cap = keep;
    }
    count(c, SL__CONN_EV_SHRINKS, 1);
}

/* Output buffers that are empty again go back to their working size (from
 * the sweep, once a second). */
static void shrink_output(struct sl__conn *c)
{
    if (c->out.len == 0)
        shrink(c, &c->out, 0);
    if (!c->writing)
        shrink(c, &c->inflight, 0);
    if (c->slot_n == 0) {
        shrink(c, &c->held, 0);
        shrink(c, &c->slotdata, 0);
    }
    account(c);
}

void sl__conn_scanned(struct sl__conn *c, uint64_t bytes)
{
    count(c, SL__CONN_EV_SCANNED_BYTES, bytes);
}

static int64_t now_ms(struct sl__conn *c)
{
    return (int64_t)uv_now(c->tcp.loop);
}

/* ------------------------------------------------------------ lifetime */

/* up->closed: the socket is closed. */
static void up_closed(struct sl__conn *c)
{
    c->flags |= SL__CONN_HANDLE_GONE;
    maybe_free(c);
}

/* up->idle: an operation of the stream ended after the close began: no
 * write is under way any more, and the memory goes once none is left. */
static void up_idle(struct sl__conn *c)
{
    c->writing = false;
    c->inflight.len = 0;
    maybe_free(c);
}

/* Free once the handle is closed and no reply slot is outstanding (a store
 * callback may still fill one). */
static void maybe_free(struct sl__conn *c)
{
    struct sl__worker *w = c->w;

    if (!(c->flags & SL__CONN_HANDLE_GONE) || c->slot_n > 0 || c->pins > 0 || c->rops > 0)
        return;
    undirty(c);
    if (c->proto && c->proto->on_close)
        c->proto->on_close(c);
    if (c->io->release != NULL)
        c->io->release(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->n_conns--;
    atomic_fetch_sub(&w->srv->n_conns, 1);
    if (c->ip_counted)
        atomic_fetch_sub_explicit(&w->srv->per_ip[c->ip_hash], 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&w->srv->buffer_bytes, c->accounted, memory_order_relaxed);
    if (w->srv->metrics != NULL)
        sl__metrics_connection(w->srv->metrics, w->id, -1);
    sl__buf_free(&c->in);
    sl__buf_free(&c->out);
    sl__buf_free(&c->inflight);
    sl__buf_free(&c->held);
    sl__buf_free(&c->slotdata);
    free(c->slots);
    free(c->ops);
    free(c);
}

/* Leave the worker's list of connections to write at the end of the
 * iteration. */
static void undirty(struct sl__conn *c)
{
    if (!c->dirty)
        return;
    if (c->dprev != NULL)
        c->dprev->dnext = c->dnext;
    else
        c->w->dirty = c->dnext;
    if (c->dnext != NULL)
        c->dnext->dprev = c->dprev;
    c->dprev = c->dnext = NULL;
    c->dirty = false;
}

/* Write `c` at the end of this loop iteration, with whatever else its
 * other answers of the iteration add. */
static void defer_flush(struct sl__conn *c)
{
    if (c->dirty)
        return;
    c->dirty = true;
    c->dprev = NULL;
    c->dnext = c->w->dirty;
    if (c->w->dirty != NULL)
        c->w->dirty->dprev = c;
    c->w->dirty = c;
}

void sl__conn_flush_dirty(struct sl__worker *w)
{
    while (w->dirty != NULL) {
        struct sl__conn *c = w->dirty;
        undirty(c);
        if (!(c->flags & SL__CONN_HANDLE_GONE) && !closing(c))
            flush(c);
    }
}

/* ------------------------------------------------ reading on or off */

/* Read from the peer (what was read while held or paused is kept in `in`
 * and offered on resume: a held stream reads no further ahead than one
 * read, the stream's read_stop). */
static int read_start(struct sl__conn *c)
{
    return c->io->read_start(c);
}

static void read_stop(struct sl__conn *c)
{
    c->io->read_stop(c);
}

static void close_handle(struct sl__conn *c)
{
    c->io->close(c);
}

/* Output flushed: close, or first linger if the peer may still be sending
 * (closing with unread input would reset the connection). */
static void finish_close(struct sl__conn *c)
{
    if ((c->flags & (SL__CONN_PEER_GONE | SL__CONN_EOF | SL__CONN_LINGER)) || c->w->stopping ||
        closing(c)) {
        if (!(c->flags & SL__CONN_LINGER))
            close_handle(c);
        return;
    }
    c->flags |= SL__CONN_LINGER;
    c->linger_until_ms = now_ms(c) + SL__CONN_LINGER_MS;
    if (c->io->shutdown(c) != 0)
        close_handle(c);
}

void sl__conn_abort(struct sl__conn *c)
{
    c->flags |= SL__CONN_CLOSING | SL__CONN_PEER_GONE;
    close_handle(c);
}

void sl__conn_close(struct sl__conn *c)
{
    if (!(c->flags & SL__CONN_CLOSING))
        read_stop(c);
    c->flags |= SL__CONN_CLOSING;
    flush(c);
}

/* ------------------------------------------------------------- writing */

/* up->tx_done: the background send of `inflight` completed. */
static void written(struct sl__conn *c, int status)
{
    c->writing = false;
    c->inflight.len = 0;
    if (status < 0) {
        sl__dbg("conn.write_failed", "conn: write failed: %s", uv_strerror(status));
        sl__conn_abort(c);
        return;
    }
    c->stalled_since_ms = -1; /* progress; flush() starts the clock again if output waits */
    if (c->partial_since_ms >= 0)
        c->partial_since_ms = now_ms(c); /* the read timeout counts from here */
    if (!resume(c))
        return;
    flush(c);
    drained(c);
}

/* A connection paused for its output, once that output is below half the
 * mark: decide the frames read meanwhile and read again. false: the
 * connection was aborted. */
static bool resume(struct sl__conn *c)
{
    if (!(c->flags & SL__CONN_PAUSED) || c->out.len >= OUT_HIGH / 2 ||
        (c->flags & SL__CONN_CLOSING))
        return true;
    c->flags &= ~SL__CONN_PAUSED;
    process(c); /* frames may be waiting in `in` */
    if (!(c->flags & (SL__CONN_PAUSED | SL__CONN_CLOSING | SL__CONN_HELD)) && !closing(c) &&
        read_start(c) != 0) {
        sl__conn_abort(c);
        return false;
    }
    return true;
}

/* `out` becomes the buffer being written (`inflight`, untouched until the
 * write completes); `out` takes the old one's memory, empty. */
static void to_inflight(struct sl__conn *c)
{
    struct sl__buf t = c->inflight;

    c->inflight = c->out;
    c->out = t;
    c->out.len = 0;
}

/* Hand `out` to the stream - what the socket takes now, the rest in the
 * background (`inflight`, untouched until the send completes) - and
 * finish a close waiting for it. */
static void flush_out(struct sl__conn *c)
{
    if (c->flags & SL__CONN_PEER_GONE) {
        c->out.len = 0;
        return;
    }
    if (!c->writing && c->out.len > 0) {
        size_t took = 0;
        if (c->io->write(c, c->out.p, c->out.len, &took) != 0) {
            sl__conn_abort(c);
            return;
        }
        if (took > 0) {
            memmove(c->out.p, c->out.p + took, c->out.len - took);
            c->out.len -= took;
        }
        if (c->out.len > 0) {
            to_inflight(c);
            c->writing = true;
            if (c->io->send(c, c->inflight.p, c->inflight.len) != 0) {
                c->writing = false;
                sl__conn_abort(c);
                return;
            }
        }
    }
    if (c->writing || c->out.len > 0) {
        if (c->stalled_since_ms < 0)
            c->stalled_since_ms = now_ms(c);
        account(c);
    } else {
        /* Output buffers are given back by the sweep, not here: a stream
         * (a proxied download) empties them after every piece, and freeing
         * and growing them again each time would cost an allocation - an
         * mmap and munmap for a large piece - per piece. */
        c->stalled_since_ms = -1;
        account(c);
    }
    if ((c->flags & SL__CONN_CLOSING) && !c->writing && c->out.len == 0 && c->slot_n == 0 &&
        c->pins == 0 && !(c->flags & SL__CONN_BUSY))
        finish_close(c);
}

/* flush_out(), and resume a connection paused for its output when that
 * output left at once (the readiness loop's direct write took it all: no
 * write completes to resume it, and it would wait forever with requests
 * unread). Each round decides the frames already read, so it ends. */
static void flush(struct sl__conn *c)
{
    flush_out(c);
    while ((c->flags & SL__CONN_PAUSED) && !c->writing && c->out.len < OUT_HIGH / 2 &&
           !(c->flags & (SL__CONN_IN_READ | SL__CONN_CLOSING | SL__CONN_HANDLE_GONE)) &&
           !closing(c)) {
        if (!resume(c) || closing(c))
            return;
        flush_out(c);
    }
}

void sl__conn_flush(struct sl__conn *c)
{
    if (!(c->flags & (SL__CONN_IN_READ | SL__CONN_HANDLE_GONE)) && !closing(c))
        flush(c);
}

void sl__conn_pin(struct sl__conn *c)
{
    c->pins++;
}

void sl__conn_unpin(struct sl__conn *c)
{
    assert(c->pins > 0);
    c->pins--;
    if (c->flags & SL__CONN_HANDLE_GONE)
        maybe_free(c);
    else
        sl__conn_flush(c);
}

void sl__conn_streams(struct sl__conn *c, int delta)
{
    assert(delta >= 0 || c->streams >= (unsigned)-delta);
    c->streams = (unsigned)((int)c->streams + delta);
    if (c->streams == 0)
        c->last_read_ms = now_ms(c); /* idle from the end of the last one */
}

void sl__conn_partial(struct sl__conn *c, bool partial)
{
    if (partial)
        c->flags |= SL__CONN_PARTIAL;
    else
        c->flags &= ~SL__CONN_PARTIAL;
}

void sl__conn_drain(struct sl__conn *c)
{
    if (c->proto != NULL && c->proto->on_drain != NULL && !(c->flags & SL__CONN_CLOSING)) {
        c->flags |= SL__CONN_DRAINING;
        c->proto->on_drain(c);
    } else {
        sl__conn_close(c);
    }
}

void sl__conn_write(struct sl__conn *c, const void *buf, size_t len)
{
    if (c->flags & SL__CONN_PEER_GONE)
        return;
    sl__buf_append(c->slot_n ? &c->held : &c->out, buf, len);
}

static struct sl__slot *slot_at(struct sl__conn *c, uint64_t id)
{
    return &c->slots[id % SL__CONN_MAX_SLOTS];
}

void *sl__conn_op_reserve(struct sl__conn *c, size_t op_size, int64_t *slot)
{
    assert(c->op_size == 0 || c->op_size == op_size); /* one protocol, one op type */
    *slot = sl__conn_slot_reserve(c);
    if (*slot < 0)
        return NULL;
    if (c->ops == NULL) {
        c->ops = sl__xzalloc(SL__CONN_MAX_SLOTS * op_size);
        c->op_size = op_size;
    }
    return (char *)c->ops + (uint64_t)*slot % SL__CONN_MAX_SLOTS * op_size;
}

int64_t sl__conn_slot_reserve(struct sl__conn *c)
{
    struct sl__slot *s;

    if (c->slot_n == SL__CONN_MAX_SLOTS)
        return -1;
    if (c->slots == NULL)
        c->slots = sl__xzalloc(SL__CONN_MAX_SLOTS * sizeof(*c->slots));
    /* Nothing in flight: start again at the ring's first slot (and op), so
     * that a pipelined batch reuses the few lines the last one wrote, not
     * the next of 256 ops that left the cache long ago. Ids keep growing. */
    if (c->slot_n == 0)
        c->slot_seq =
            (c->slot_seq + SL__CONN_MAX_SLOTS - 1) / SL__CONN_MAX_SLOTS * SL__CONN_MAX_SLOTS;
    s = slot_at(c, c->slot_seq);
    s->held_off = c->held.len;
    s->filled = false;
    c->slot_n++;
    return (int64_t)c->slot_seq++;
}

/* Move held bytes up to `off` into `out`. */
static void release_held(struct sl__conn *c, size_t off)
{
    assert(off >= c->held_done && off <= c->held.len);
    if (off > c->held_done && !(c->flags & SL__CONN_PEER_GONE)) /* held.p may be NULL */
        sl__buf_append(&c->out, c->held.p + c->held_done, off - c->held_done);
    c->held_done = off;
}

struct sl__buf *sl__conn_slot_out(struct sl__conn *c, int64_t id)
{
    uint64_t head = c->slot_seq - c->slot_n;

    assert(id >= 0 && (uint64_t)id >= head && (uint64_t)id < c->slot_seq);
    if ((uint64_t)id != head || (c->flags & SL__CONN_PEER_GONE))
        return NULL;
    release_held(c, slot_at(c, (uint64_t)id)->held_off);
    return &c->out;
}

void sl__conn_slot_fill(struct sl__conn *c, int64_t id, const void *buf, size_t len)
{
    uint64_t head = c->slot_seq - c->slot_n;
    struct sl__slot *s;

    assert(id >= 0 && (uint64_t)id >= head && (uint64_t)id < c->slot_seq);
    s = slot_at(c, (uint64_t)id);
    if ((uint64_t)id != head) {
        s->data_off = c->slotdata.len;
        s->data_len = len;
        s->filled = true;
        sl__buf_append(&c->slotdata, buf, len);
        return;
    }
    release_held(c, s->held_off);
    if (!(c->flags & SL__CONN_PEER_GONE))
        sl__buf_append(&c->out, buf, len);
    c->slot_n--;
    while (c->slot_n > 0) {
        s = slot_at(c, c->slot_seq - c->slot_n);
        release_held(c, s->held_off);
        if (!s->filled)
            break;
        if (!(c->flags & SL__CONN_PEER_GONE))
            sl__buf_append(&c->out, c->slotdata.p + s->data_off, s->data_len);
        c->slot_n--;
    }
    if (c->slot_n == 0) {
        release_held(c, c->held.len);
        c->held.len = c->held_done = 0;
        c->slotdata.len = 0;
    }
    if (c->flags & SL__CONN_HANDLE_GONE) {
        maybe_free(c);
        return;
    }
    if (c->flags & SL__CONN_IN_READ)
        return; /* flushed when on_read returns */
    /* A protocol that ran out of slots left whole frames in `in`. */
    if (c->in.len > 0 && !(c->flags & SL__CONN_PAUSED))
        process(c);
    if (!(c->flags & SL__CONN_PAUSED))
        defer_flush(c); /* the store's other answers of this read join it */
}

/* ------------------------------------------------------------- reading */

/* May c's input buffer grow from its capacity to `cap`? Small buffers
 * always may; a buffer for a large frame draws on the budget shared by
 * every connection (server.max_buffer_bytes). */
static bool budget_allows(struct sl__conn *c, size_t cap)
{
    const struct sl__server *srv = c->w->srv;
    int64_t more = (int64_t)(cap - c->in.cap);

    return cap <= SL__CONN_SMALL_BYTES ||
           atomic_load_explicit(&srv->buffer_bytes, memory_order_relaxed) + more <=
               (int64_t)srv->cfg.max_buffer_bytes;
}

void sl__conn_stream_bytes(struct sl__conn *c, int64_t bytes)
{
    c->stream_bytes = bytes;
    account(c);
}

void sl__conn_handshaking(struct sl__conn *c, bool on)
{
    if (on)
        c->partial_since_ms = now_ms(c);
    else if (c->in.len == 0 && !(c->flags & SL__CONN_PARTIAL))
        c->partial_since_ms = -1;
}

bool sl__conn_budget(struct sl__conn *c, int64_t delta, bool refusable)
{
    const struct sl__server *srv = c->w->srv;

    if (refusable && delta > 0 && c->proto_bytes + delta > (int64_t)SL__CONN_SMALL_BYTES &&
        atomic_load_explicit(&srv->buffer_bytes, memory_order_relaxed) + delta >
            (int64_t)srv->cfg.max_buffer_bytes)
        return false;
    c->proto_bytes += delta;
    account(c);
    return true;
}

/* Room for READ_CHUNK more bytes in `in` (a read's, or a ring buffer's),
 * growing it within the budget; false when the budget refuses. */
static bool in_room(struct sl__conn *c)
{
    if (c->in.cap - c->in.len < READ_CHUNK) {
        size_t cap = c->in.cap ? c->in.cap * 2 : READ_CHUNK;
        while (cap - c->in.len < READ_CHUNK)
            cap *= 2;
        if (!budget_allows(c, cap))
            return false;
        c->in.p = sl__xrealloc(c->in.p, cap);
        c->in.cap = cap;
        account(c);
    }
    return true;
}

/* up->rx_room: where the next read goes (the end of `in`). */
static bool rx_room(struct sl__conn *c, char **p, size_t *room)
{
    if (!in_room(c))
        return false; /* SL__CONN_RX_NOBUFS in rx: closed there */
    *p = c->in.p + c->in.len;
    *room = c->in.cap - c->in.len;
    return true;
}

/* Pick the protocol from the first bytes; false if the connection closed. */
static bool sniff(struct sl__conn *c)
{
    const struct sl__proto *p = NULL;
    int r = sl__proto_sniff(c->ls->protos, c->in.p, c->in.len, &p);

    if (r == -2)
        return c->in.len < 64 || (sl__conn_abort(c), false);
    if (r != 1) {
        sl__dbg("conn.unknown_protocol", "conn: no protocol accepts the first bytes; closing");
        sl__conn_abort(c);
        return false;
    }
    c->proto = p;
    if (p->on_open && p->on_open(c) != 0) {
        sl__conn_abort(c);
        return false;
    }
    return true;
}

/* Hand every complete frame in `in` to the protocol. */
static void process(struct sl__conn *c)
{
    ssize_t n;

    if (c->in.len == 0 || (c->flags & SL__CONN_CLOSING))
        return;
    if (c->proto == NULL && (!sniff(c) || c->proto == NULL))
        return;
    c->flags |= SL__CONN_IN_READ;
    n = c->proto->on_read(c, c->in.p, c->in.len);
    c->flags &= ~SL__CONN_IN_READ;
    if (n < 0) {
        sl__conn_close(c);
        return;
    }
    assert((size_t)n <= c->in.len);
    memmove(c->in.p, c->in.p + n, c->in.len - (size_t)n);
    c->in.len -= (size_t)n;
    if (c->in.len == 0 && !(c->flags & SL__CONN_PARTIAL))
        c->partial_since_ms = -1;
    else if (n > 0 || c->partial_since_ms < 0)
        c->partial_since_ms = now_ms(c);
    if (n > 0) {
        shrink(c, &c->in, READ_CHUNK);
        account(c);
    }
    if (c->in.len >= c->ls->max_frame_bytes) {
        sl__dbg("conn.frame_too_large", "conn: frame above %zu bytes; closing",
                c->ls->max_frame_bytes);
        count(c, SL__CONN_EV_CLOSED_FRAME, 1);
        sl__conn_abort(c);
        return;
    }
    if (c->out.len + c->held.len > OUT_HIGH && !(c->flags & SL__CONN_CLOSING)) {
        c->flags |= SL__CONN_PAUSED;
        read_stop(c);
    }
}

/* up->rx: what a read brought: `nread` bytes appended to `in`, or
 * SL__CONN_RX_EOF, or an error (libuv's codes: negative errno). */
static void read_result(struct sl__conn *c, ssize_t nread)
{
    if (c->flags & SL__CONN_LINGER) { /* draining: drop input, close at EOF */
        if (nread < 0)
            close_handle(c);
        return;
    }
    if (nread == SL__CONN_RX_EOF) {
        c->flags |= SL__CONN_EOF;
        sl__conn_close(c); /* half-closed: the replies still go out */
        return;
    }
    if (nread == SL__CONN_RX_NOBUFS) { /* rx_room: a large frame past the buffer budget */
        static struct sl__lograte rl;
        sl__log_rate(&rl, SL__LOG_WARN, "conn.buffer_budget",
                     &SL__LOG_STR("limit", "server.max_buffer_bytes"), 1,
                     "conn: server.max_buffer_bytes (%zu) reached; closing a connection with a "
                     "large frame",
                     c->w->srv->cfg.max_buffer_bytes);
        count(c, SL__CONN_EV_CLOSED_BUDGET, 1);
        sl__conn_abort(c);
        return;
    }
    if (nread < 0) {
        c->flags |= SL__CONN_PEER_GONE;
        sl__conn_abort(c);
        return;
    }
    if (nread == 0 || (c->flags & SL__CONN_CLOSING))
        return;
    c->in.len += (size_t)nread;
    c->last_read_ms = now_ms(c);
    c->got_bytes = true;
    count(c, SL__CONN_EV_READ_BYTES, (uint64_t)nread);
    if (c->flags & (SL__CONN_HELD | SL__CONN_PAUSED))
        return; /* what the receive armed before reading stopped brought: offered on resume */
    process(c);
    if (!(c->flags & SL__CONN_HANDLE_GONE) && !closing(c))
        flush(c);
}

const struct sl__conn_up sl__conn_up_core = {
    .rx_room = rx_room,
    .rx = read_result,
    .tx_done = written,
    .closed = up_closed,
    .idle = up_idle,
};

size_t sl__conn_peer_addr(struct sl__conn *c, unsigned char out[16])
{
    struct sockaddr_storage sa;
    int len = sizeof(sa);

    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) != 0)
        return 0;
    return sl__client_key((const struct sockaddr *)&sa, c->w->srv->cfg.ipv6_client_prefix, out);
}

/* One more connection from c's peer (its client key: an IPv6 network
 * counts as one): false (and nothing counted) past
 * server.max_connections_per_ip. The count lives in a table of counters
 * indexed by a keyed hash of the key, shared by the workers: a collision
 * makes two clients share a limit, never lifts one. */
static bool take_ip_slot(struct sl__conn *c)
{
    const struct sl__server *srv = c->w->srv;
    unsigned char addr[16];
    size_t alen;

    if (srv->per_ip == NULL || (alen = sl__conn_peer_addr(c, addr)) == 0)
        return true;
    c->ip_hash = sl_siphash(srv->ip_secret, addr, alen) % SL__PER_IP_SLOTS;
    if (atomic_fetch_add_explicit(&srv->per_ip[c->ip_hash], 1, memory_order_relaxed) >=
        srv->cfg.max_conns_per_ip) {
        atomic_fetch_sub_explicit(&srv->per_ip[c->ip_hash], 1, memory_order_relaxed);
        return false;
    }
    c->ip_counted = true;
    return true;
}

void sl__conn_accept(struct sl__worker *w, const struct sl__listener *ls, uv_stream_t *server)
{
    static struct sl__lograte rl_max, rl_ip;
    struct sl__conn *c = sl__xzalloc(sizeof(*c));

    c->w = w;
    c->ls = ls;
    c->partial_since_ms = -1;
    c->stalled_since_ms = -1;
    /* One stream per connection, chosen here: the back-end, under the TLS
     * transform on a listener with TLS (conn_io.h). */
    c->io = w->ring != NULL ? &sl__conn_io_ring : &sl__conn_io_uv;
    c->up = &sl__conn_up_core;
    if (ls->tls != NULL)
        sl__conn_tls_install(c, c->io);
    uv_tcp_init(&w->loop, &c->tcp);
    c->tcp.data = c;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->n_conns++;
    if (w->srv->metrics != NULL)
        sl__metrics_connection(w->srv->metrics, w->id, +1);
    unsigned n = atomic_fetch_add(&w->srv->n_conns, 1) + 1;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        sl__conn_abort(c);
        return;
    }
    if (n > w->srv->cfg.max_connections) {
        sl__log_rate(&rl_max, SL__LOG_WARN, "conn.refused",
                     &SL__LOG_STR("limit", "server.max_connections"), 1,
                     "conn: %u connections open, server.max_connections is %u; refusing one", n - 1,
                     w->srv->cfg.max_connections);
        count(c, SL__CONN_EV_REFUSED_MAX, 1);
        sl__conn_abort(c);
        return;
    }
    if (!take_ip_slot(c)) {
        sl__log_rate(&rl_ip, SL__LOG_WARN, "conn.refused",
                     &SL__LOG_STR("limit", "server.max_connections_per_ip"), 1,
                     "conn: server.max_connections_per_ip (%u) reached for a client; refusing one",
                     w->srv->cfg.max_conns_per_ip);
        count(c, SL__CONN_EV_REFUSED_PER_IP, 1);
        sl__conn_abort(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_read_ms = c->accepted_ms = now_ms(c);
    if (c->io->open(c) != 0 || read_start(c) != 0)
        sl__conn_abort(c);
}

void sl__conn_sweep(struct sl__conn *c, int64_t now)
{
    const struct sl__config *cfg = &c->w->srv->cfg;

    if ((c->flags & SL__CONN_LINGER) && now >= c->linger_until_ms)
        close_handle(c);
    if (cfg->write_timeout_ms > 0 && c->stalled_since_ms >= 0 &&
        now - c->stalled_since_ms > cfg->write_timeout_ms) {
        /* the peer does not read its replies: drop them and free the buffers */
        sl__dbg("conn.write_timeout", "conn: replies unread for %lld ms; closing",
                (long long)(now - c->stalled_since_ms));
        count(c, SL__CONN_EV_CLOSED_WRITE, 1);
        sl__conn_abort(c);
        return;
    }
    if (c->flags & SL__CONN_CLOSING)
        return;
    if (!c->writing && c->out.len == 0)
        shrink_output(c);
    if (cfg->header_timeout_ms > 0 && !c->got_bytes &&
        now - c->accepted_ms > cfg->header_timeout_ms) {
        sl__dbg("conn.header_timeout", "conn: nothing sent in %lld ms; closing",
                (long long)(now - c->accepted_ms));
        count(c, SL__CONN_EV_CLOSED_HEADER, 1);
        sl__conn_abort(c);
    } else if (cfg->read_timeout_ms > 0 && c->partial_since_ms >= 0 &&
               !(c->flags & (SL__CONN_BUSY | SL__CONN_PAUSED)) && c->stalled_since_ms < 0 &&
               now - c->partial_since_ms > cfg->read_timeout_ms) {
        /* (not while replies wait for the client, paused or not: the
         * requests behind them wait for the server, and a client slow to
         * read is server.write_timeout's) */
        sl__dbg("conn.read_timeout", "conn: incomplete request for %lld ms; closing",
                (long long)(now - c->partial_since_ms));
        count(c, SL__CONN_EV_CLOSED_READ, 1);
        sl__conn_abort(c);
    } else if (cfg->idle_timeout_ms > 0 && now - c->last_read_ms > cfg->idle_timeout_ms &&
               c->slot_n == 0 && c->pins == 0 && c->streams == 0 &&
               !(c->flags & (SL__CONN_BUSY | SL__CONN_DRAINING))) {
        sl__dbg("conn.idle_timeout", "conn: idle for %lld ms; closing",
                (long long)(now - c->last_read_ms));
        count(c, SL__CONN_EV_CLOSED_IDLE, 1);
        sl__conn_drain(c);
    }
}

/* ------------------------------------------------------------ streaming */

void sl__conn_hold(struct sl__conn *c)
{
    if (!(c->flags & SL__CONN_HELD)) {
        c->flags |= SL__CONN_HELD;
        read_stop(c);
    }
}

void sl__conn_unhold(struct sl__conn *c)
{
    if (!(c->flags & SL__CONN_HELD))
        return;
    c->flags &= ~SL__CONN_HELD;
    if (c->flags & (SL__CONN_CLOSING | SL__CONN_HANDLE_GONE))
        return;
    if (!(c->flags & SL__CONN_IN_READ))
        process(c); /* inside on_read the protocol is being offered the input already */
    if (!(c->flags & (SL__CONN_PAUSED | SL__CONN_CLOSING | SL__CONN_HELD | SL__CONN_HANDLE_GONE)) &&
        !closing(c) && read_start(c) != 0) {
        sl__conn_abort(c);
        return;
    }
    if (!(c->flags & (SL__CONN_HANDLE_GONE | SL__CONN_IN_READ)) && !closing(c))
        flush(c);
}

void sl__conn_set_busy(struct sl__conn *c, bool busy)
{
    if (busy) {
        c->flags |= SL__CONN_BUSY;
        return;
    }
    if (!(c->flags & SL__CONN_BUSY))
        return;
    c->flags &= ~SL__CONN_BUSY;
    c->last_read_ms = now_ms(c);
    if (c->partial_since_ms >= 0)
        c->partial_since_ms = c->last_read_ms;
    if ((c->flags & SL__CONN_CLOSING) && !(c->flags & SL__CONN_IN_READ) && !closing(c))
        flush(c); /* a close waited for this request */
}

bool sl__conn_out_full(const struct sl__conn *c)
{
    return c->out.len + c->held.len > OUT_HIGH;
}

size_t sl__conn_out_bytes(const struct sl__conn *c)
{
    return c->out.len + c->inflight.len + (c->held.len - c->held_done);
}

bool sl__conn_want_sent(struct sl__conn *c)
{
    if (!c->writing && c->out.len == 0)
        return false;
    c->flags |= SL__CONN_WANT_SENT;
    return true;
}

/* After a write completed: tell a protocol waiting for its output to go. */
static void drained(struct sl__conn *c)
{
    if (!(c->flags & SL__CONN_WANT_SENT) || c->writing || c->out.len > 0 ||
        (c->flags & SL__CONN_HANDLE_GONE) || closing(c))
        return;
    c->flags &= ~SL__CONN_WANT_SENT;
    if (c->proto != NULL && c->proto->on_sent != NULL)
        c->proto->on_sent(c);
}

bool sl__conn_is_closing(const struct sl__conn *c)
{
    return (c->flags & (SL__CONN_CLOSING | SL__CONN_PEER_GONE | SL__CONN_HANDLE_GONE)) != 0 ||
           closing(c);
}
