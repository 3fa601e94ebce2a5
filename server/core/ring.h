/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * ring.h - a worker's io_uring (internal): the client connections' reads
 * and writes as submissions, all of one loop iteration sent to the kernel
 * in one io_uring_enter, their completions reaped right after it and when
 * the ring's file descriptor (polled by the worker's libuv loop) becomes
 * readable.
 *
 * Reads are receives into buffers the ring provides (a worker's pool, so
 * the kernel never writes into a connection's own buffers and a
 * connection may move or grow them at any time); the completion hands the
 * bytes over and the buffer goes back to the pool at once. One receive is
 * armed per connection at a time: the owner arms the next from the
 * completion, so reading stops by not arming it. Writes are single sends
 * of a buffer the caller keeps untouched until the send completes.
 *
 * The ring knows nothing of connections: an operation is a struct
 * sl__ring_op with a completion function, embedded in its owner, which
 * must stay alive until the operation's last completion.
 *
 * Without liburing at build time, or when the kernel refuses (seccomp,
 * an old kernel, io_uring disabled), sl__ring_new() fails with a reason
 * and the worker uses libuv's readiness loop instead.
 */
#ifndef SL_SERVER_RING_H
#define SL_SERVER_RING_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

struct sl__ring;
struct sl__ring_op;

/* The most one receive brings (the size of the worker's pool buffers). */
#define SL__RING_BUF_BYTES 16384u

/* The completion of `op`: `res` as the kernel gave it (bytes, 0 for EOF,
 * -errno); `data`/`len` the bytes a receive brought (valid only during the
 * call). */
typedef void (*sl__ring_done)(struct sl__ring_op *op, int res, const char *data, size_t len);

struct sl__ring_op {
    sl__ring_done done;
};

/* Set up a ring on `loop`. 0 and *out, or a negative errno and `why`
 * (a sentence for the log) when io_uring cannot be used here. */
int sl__ring_new(uv_loop_t *loop, struct sl__ring **out, char *why, size_t why_len);

/* Stop polling the ring (the loop may end once nothing else runs); call
 * when no operation is outstanding. sl__ring_free() after the loop ends. */
void sl__ring_close(struct sl__ring *r);
void sl__ring_free(struct sl__ring *r);

/* Receive once from `fd`: one completion with the bytes (at most one pool
 * buffer), 0 for the peer's EOF, or -errno (-ENOBUFS: the pool was empty,
 * arm again). */
void sl__ring_recv(struct sl__ring *r, struct sl__ring_op *op, int fd);

/* Send `len` bytes of `p` (kept unchanged until the completion) to `fd`;
 * one completion with the bytes sent, which may be fewer than `len`. */
void sl__ring_send(struct sl__ring *r, struct sl__ring_op *op, int fd, const void *p, size_t len);

/* Cancel `op`'s outstanding operation, if any; it completes with
 * -ECANCELED (or normally, if it finished first). */
void sl__ring_cancel(struct sl__ring *r, struct sl__ring_op *op);

/* `fd` is about to be closed. An operation is prepared with a descriptor
 * number and the kernel looks the number up when it is submitted, at the
 * end of the iteration; a connection accepted before then may be given the
 * same number, and would receive the closed one's sends and lose its bytes
 * to its receive. So when a prepared operation names fd, what is prepared
 * goes to the kernel now (one system call, no completion delivered), and
 * an operation still waiting for room in the submission queue completes
 * as a no-op (result 0) instead of touching the descriptor. Call before
 * the close and before cancelling. */
void sl__ring_fd_closing(struct sl__ring *r, int fd);

/* Hand every operation prepared since the last call to the kernel, in one
 * system call; nothing when none is. Called at the end of each loop
 * iteration (the worker's check and prepare handles). */
void sl__ring_submit(struct sl__ring *r);

/* For the tests: while `hold`, every request waits in the queue the ring
 * keeps when the submission queue is full (in use only when the kernel
 * does not take what is submitted), so that path can be exercised. */
void sl__ring_hold_submissions(struct sl__ring *r, bool hold);

#endif /* SL_SERVER_RING_H */
