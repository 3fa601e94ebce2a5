/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn.h - the connection API that protocols and the worker use (internal).
 * Types and the buffering model are in conn-t.h; the protocol side of the
 * contract is in proto-t.h.
 *
 * Every function runs on the connection's worker loop thread.
 */
#ifndef SL_SERVER_CONN_H
#define SL_SERVER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conn-t.h"

/* Accept one connection on `server` (a listening handle of worker `w`,
 * listener `ls`) and start reading. Errors are logged; nothing to return. */
void sl__conn_accept(struct sl__worker *w, const struct sl__listener *ls, uv_stream_t *server);

/* Queue `len` bytes of reply, in order after everything written or reserved
 * before. Copies the bytes. */
void sl__conn_write(struct sl__conn *c, const void *buf, size_t len);

/* Reserve the next place in the output stream for a reply that arrives
 * later. Returns the slot's id (>= 0), or -1 when SL__CONN_MAX_SLOTS are
 * reserved already (the protocol should stop consuming and return). */
int64_t sl__conn_slot_reserve(struct sl__conn *c);

/* Reserve the next reply slot (*slot, as sl__conn_slot_reserve) together
 * with the protocol's operation that will fill it: `op_size` bytes at the
 * slot's place in a ring the connection keeps (allocated on first use,
 * freed with the connection; one op size per connection), so starting an
 * asynchronous answer allocates nothing. The op stays valid until its slot
 * is filled. NULL when SL__CONN_MAX_SLOTS are reserved already. */
void *sl__conn_op_reserve(struct sl__conn *c, size_t op_size, int64_t *slot);

/* Fill slot `id` with its reply (copied). Replies of later slots and later
 * writes are released in order once every slot before them is filled.
 * Safe after the peer has gone: the bytes are dropped. */
void sl__conn_slot_fill(struct sl__conn *c, int64_t id, const void *buf, size_t len);

/* Where slot `id`'s reply can be written in place, saving a copy: the
 * connection's output, when `id` is the next reply due (what is held
 * before it is released first) and the peer is there; NULL otherwise
 * (build the reply elsewhere and hand it to sl__conn_slot_fill). After
 * appending the reply to it, call sl__conn_slot_fill(c, id, NULL, 0). */
struct sl__buf *sl__conn_slot_out(struct sl__conn *c, int64_t id);

/* A protocol's parser looked at `bytes` more bytes (the metrics show it
 * against the bytes read: a parser that re-scans partial frames shows). */
void sl__conn_scanned(struct sl__conn *c, uint64_t bytes);

/* Pin the connection while an answer is owed that has no reserved place in
 * the output (a multiplexed stream's): it is not closed for idleness, a
 * graceful close waits for it and its memory is not freed until every pin
 * is released. sl__conn_unpin() flushes what was written meanwhile. */
void sl__conn_pin(struct sl__conn *c);
void sl__conn_unpin(struct sl__conn *c);

/* A long-lived call (a gRPC stream that answers as things change: a
 * health watch, a reflection conversation) opened (+1) or ended (-1):
 * while any is open the connection is not closed for idleness, although
 * the peer may send nothing for hours. Unlike a pin it holds back neither
 * a close nor the connection's memory: the protocol ends its streams on
 * drain and forgets them on close. */
void sl__conn_streams(struct sl__conn *c, int delta);

/* Memory the protocol holds for c beyond the connection's own buffers
 * (gRPC's per-call messages) changes by `delta` bytes: counted in the
 * server's buffer budget (server.max_buffer_bytes, the gauge
 * sluice_connection_buffer_bytes) like those buffers. Growth that may be
 * refused (`refusable`) and takes the protocol's bytes past
 * SL__CONN_SMALL_BYTES is refused when the budget has no room: false,
 * nothing counted, and the protocol must not grow. Other growth and
 * giving back (delta < 0) always succeed. The connection's end gives back
 * whatever is still counted. */
bool sl__conn_budget(struct sl__conn *c, int64_t delta, bool refusable);

/* For a transform of the byte stream (conn_tls.c): its own memory is now
 * `bytes`, counted in the buffer budget with the connection's buffers. */
void sl__conn_stream_bytes(struct sl__conn *c, int64_t bytes);

/* For a transform: a handshake runs (`on`), which server.read_timeout
 * bounds from now as it bounds an incomplete request; or it ended. */
void sl__conn_handshaking(struct sl__conn *c, bool on);

/* The peer's client key into out (client_key.h): 4 bytes (IPv4, also
 * IPv4-mapped) or 16 (IPv6, masked to server.ipv6_client_prefix bits);
 * 0 when the socket cannot say. */
size_t sl__conn_peer_addr(struct sl__conn *c, unsigned char out[16]);

/* Send what sl__conn_write() queued outside on_read() (a timer's answer);
 * inside on_read() nothing is needed, the core flushes when it returns. */
void sl__conn_flush(struct sl__conn *c);

/* The protocol holds part of a request it consumed from `in` (a stream
 * whose message is incomplete): the read timeout runs as it does for
 * unconsumed bytes. Set inside on_read(). */
void sl__conn_partial(struct sl__conn *c, bool partial);

/* End the connection gracefully: the protocol's on_drain() if it has one,
 * else sl__conn_close(). Used when the server stops and for idleness. */
void sl__conn_drain(struct sl__conn *c);

/* Send what is queued, then close. Further reads are ignored. */
void sl__conn_close(struct sl__conn *c);

/* Close now (drop queued output), for a peer that broke the protocol
 * beyond reply. */
void sl__conn_abort(struct sl__conn *c);

/* The name of the client certificate `c`'s handshake verified - its first
 * URI SAN, else its first DNS SAN, else its subject's CN - and its length
 * in *len; NULL without one (no TLS, no certificate, or one with no
 * usable name). It lives as long as the connection (conn_tls.c). */
const char *sl__conn_peer_cert_name(const struct sl__conn *c, size_t *len);
/* Does `c`'s verified client certificate hold the admin privilege: one of
 * its URI or DNS SANs, or its name above, is in admin.client_cert_names? */
bool sl__conn_cert_admin(const struct sl__conn *c);

/* The worker's view of its connections: close idle ones and those stuck in
 * an incomplete frame; called by the worker's sweep timer. */
void sl__conn_sweep(struct sl__conn *c, int64_t now_ms);
/* Write every connection of `w` whose replies came outside its reads
 * (a remote store's answers): once per loop iteration, from the worker's
 * check and prepare handles, so that the answers one read of the store
 * brings leave in one write per client. */
void sl__conn_flush_dirty(struct sl__worker *w);

/*
 * Streaming, for a protocol that forwards bodies as they arrive instead of
 * taking whole frames (the proxy). Its on_read() may consume part of a
 * frame; bytes it leaves stay in the input buffer, and it must hold the
 * connection when it cannot take more, or the buffer reaches the
 * listener's max frame size and the connection is closed.
 */

/* Stop reading from the peer until sl__conn_unhold(): the protocol cannot
 * take more input now (where it forwards to is backed up, or the next
 * request must wait for this one). Bytes already read stay buffered.
 * Idempotent; allowed inside on_read(). */
void sl__conn_hold(struct sl__conn *c);

/* Undo sl__conn_hold(): offer the buffered input to on_read() at once,
 * then read again (unless the connection is closing or paused for its own
 * output). Idempotent. Inside on_read() it only reads again (the input is
 * being offered already). */
void sl__conn_unhold(struct sl__conn *c);

/* Mark a request in flight (busy) or finished. While busy, the worker's
 * sweep closes the connection neither for idleness nor for an incomplete
 * request (the protocol runs its own timeouts), and a close asked for
 * meanwhile (the peer's EOF, the server stopping) is finished only once
 * the connection is no longer busy, so the answer still goes out. Leaving
 * busy restarts the idle time and finishes such a pending close. */
void sl__conn_set_busy(struct sl__conn *c, bool busy);

/* Bytes queued for the peer and not yet handed to the kernel (including
 * those waiting behind reply slots). */
size_t sl__conn_out_bytes(const struct sl__conn *c);

/* Enough output waits for the peer that a protocol should decide no more
 * of the frames already read: it returns what it consumed so far, reading
 * stops, and the rest is decided once the peer has read its replies.
 * Without it, one read of pipelined cheap requests with large replies
 * (GET /metrics) would queue megabytes past the pause mark. */
bool sl__conn_out_full(const struct sl__conn *c);

/* Send what is queued now; for a protocol writing from its own I/O
 * callbacks (outside on_read(), whose return flushes). */
void sl__conn_flush(struct sl__conn *c);

/* Ask for one call of the protocol's on_sent() once everything queued
 * has been handed to the kernel; for a protocol that stops producing
 * output while sl__conn_out_bytes() is high. false when nothing is queued
 * or being written (on_sent() will not be called: write at once). */
bool sl__conn_want_sent(struct sl__conn *c);

/* The connection is closing or its peer is gone: nothing more of a stream
 * should be written. */
bool sl__conn_is_closing(const struct sl__conn *c);

/* Make room for `len` more bytes in b (the daemon aborts on out of memory). */
void sl__buf_grow(struct sl__buf *b, size_t len);

/* Room for `len` more bytes at the end of b, to be written in place and
 * then counted (b->len += what was written). */
static inline char *sl__buf_room(struct sl__buf *b, size_t len)
{
    if (b->cap - b->len < len)
        sl__buf_grow(b, len);
    return b->p + b->len;
}

/* Append to a buffer, growing it. Inline: replies are built of many short
 * pieces (a RESP status is a dozen), most of constant length, which the
 * compiler then copies without a call. */
static inline void sl__buf_append(struct sl__buf *b, const void *p, size_t len)
{
    if (len == 0)
        return;
    memcpy(sl__buf_room(b, len), p, len);
    b->len += len;
}
/* Append printf-style text, a line of up to 511 bytes (longer is cut):
 * for the few scrape and status writers outside the hot path. */
void sl__buf_appendf(struct sl__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal (buf.h's escaping), or null for NULL:
 * for status writers that build JSON in a growing buffer. */
void sl__buf_json_str(struct sl__buf *b, const char *s);
void sl__buf_free(struct sl__buf *b);

#endif /* SL_SERVER_CONN_H */
