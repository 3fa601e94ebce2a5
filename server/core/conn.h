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

/* Pin the connection while an answer is owed that has no reserved place in
 * the output (a multiplexed stream's): it is not closed for idleness, a
 * graceful close waits for it and its memory is not freed until every pin
 * is released. sl__conn_unpin() flushes what was written meanwhile. */
void sl__conn_pin(struct sl__conn *c);
void sl__conn_unpin(struct sl__conn *c);

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

/* The worker's view of its connections: close idle ones and those stuck in
 * an incomplete frame; called by the worker's sweep timer. */
void sl__conn_sweep(struct sl__conn *c, int64_t now_ms);

/* Append to a buffer, growing it (the daemon aborts on out of memory). */
void sl__buf_append(struct sl__buf *b, const void *p, size_t len);
void sl__buf_free(struct sl__buf *b);

#endif /* SL_SERVER_CONN_H */
