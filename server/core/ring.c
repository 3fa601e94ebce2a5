/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * ring.c - a worker's io_uring (see ring.h), over Debian's liburing.
 *
 * Why: with a readiness loop every request costs the worker two system
 * calls (a read and a write per connection per loop iteration); here the
 * reads stay armed in the kernel (a receive per connection) and every write of
 * an iteration leaves in the one io_uring_enter that ends it. The kernel
 * was most of sluiced's CPU per decision (docs/benchmarks-history.md).
 *
 * The libuv loop stays the worker's loop: it polls the ring's file
 * descriptor like any other, and its check and prepare handles submit.
 */
#include "ring.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef SL_HAVE_URING

#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "xalloc.h"

#define RING_ENTRIES 1024u
/* The receive buffers every connection of the worker shares: a receive
 * takes one when its bytes arrive (an armed receive holds none), brings at
 * most BUF_BYTES, copied into the connection's input at once and the
 * buffer given back. When all are in use a receive ends with -ENOBUFS and
 * is armed again at the end of the iteration. */
#define N_BUFS    64u /* a power of two */
#define BUF_BYTES SL__RING_BUF_BYTES
#define BGID      0
/* user_data of a cancel: its completion (only on failure) is dropped */
#define CANCEL_TAG 1u

enum req_kind { REQ_RECV, REQ_SEND, REQ_CANCEL, REQ_NOP };

/* A request waiting for room in the submission queue (it was full and the
 * kernel did not take it: only when completions overflow). */
struct req {
    enum req_kind kind;
    struct sl__ring_op *op;
    int fd;
    const void *p;
    size_t len;
};

static void on_poll(uv_poll_t *h, int status, int events);

struct sl__ring {
    struct io_uring ring;
    uv_poll_t poll;
    struct io_uring_buf_ring *br;
    char *bufs;
    unsigned prepared; /* submissions not yet handed to the kernel */
    struct req *later;
    size_t n_later, cap_later;
    bool held; /* sl__ring_hold_submissions: everything waits in `later` */
};

/* Receives into a registered buffer ring need Linux 5.19; ask for 6.0,
 * the first release where they are known to work with sockets. */
static bool kernel_new_enough(char *why, size_t why_len)
{
    struct utsname u;
    unsigned major = 0;

    if (uname(&u) != 0 || sscanf(u.release, "%u.", &major) != 1)
        return true; /* unknown: let the setup below decide */
    if (major >= 6)
        return true;
    snprintf(why, why_len, "kernel %s is older than 6.0", u.release);
    return false;
}

int sl__ring_new(uv_loop_t *loop, struct sl__ring **out, char *why, size_t why_len)
{
    /* COOP_TASKRUN: a completion's work waits for the worker's next entry
     * into the kernel instead of interrupting it (an inter-processor
     * interrupt per received segment cost 1.5-2x the readiness loop's CPU
     * per decision in bench_decision_cpu; with it, less than the loop's). */
    struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN};
    struct io_uring_buf_reg reg = {0};
    struct sl__ring *r;
    size_t br_bytes = N_BUFS * sizeof(struct io_uring_buf);
    int e;

    *out = NULL;
    if (!kernel_new_enough(why, why_len))
        return -ENOSYS;
    r = sl__xzalloc(sizeof(*r));
    e = io_uring_queue_init_params(RING_ENTRIES, &r->ring, &p);
    if (e < 0) {
        snprintf(why, why_len, "io_uring_setup: %s", strerror(-e));
        free(r);
        return e;
    }
    r->br = mmap(NULL, br_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (r->br == MAP_FAILED) {
        e = -errno;
        snprintf(why, why_len, "mmap of the buffer ring: %s", strerror(errno));
        r->br = NULL;
        goto fail;
    }
    reg.ring_addr = (uint64_t)(uintptr_t)r->br;
    reg.ring_entries = N_BUFS;
    reg.bgid = BGID;
    e = io_uring_register_buf_ring(&r->ring, &reg, 0);
    if (e < 0) {
        snprintf(why, why_len, "registering the receive buffers: %s", strerror(-e));
        goto fail;
    }
    r->bufs = sl__xrealloc(NULL, (size_t)N_BUFS * BUF_BYTES);
    io_uring_buf_ring_init(r->br);
    for (unsigned i = 0; i < N_BUFS; i++)
        io_uring_buf_ring_add(r->br, r->bufs + (size_t)i * BUF_BYTES, BUF_BYTES, (unsigned short)i,
                              io_uring_buf_ring_mask(N_BUFS), (int)i);
    io_uring_buf_ring_advance(r->br, N_BUFS);
    e = uv_poll_init(loop, &r->poll, r->ring.ring_fd);
    if (e != 0) {
        snprintf(why, why_len, "polling the ring: %s", uv_strerror(e));
        goto fail;
    }
    r->poll.data = r;
    uv_poll_start(&r->poll, UV_READABLE, on_poll);
    *out = r;
    return 0;
fail:
    io_uring_queue_exit(&r->ring);
    if (r->br != NULL)
        munmap(r->br, br_bytes);
    free(r->bufs);
    free(r);
    return e < 0 ? e : -EINVAL;
}

/* Every completion waiting: deliver it, give its buffer back. Callbacks
 * may prepare new submissions (sent at the end of the iteration) but do
 * not reap, so walking the queue here is safe. */
static void reap(struct sl__ring *r);

static void on_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    reap(h->data);
}

static void reap(struct sl__ring *r)
{
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0, given = 0, mask = io_uring_buf_ring_mask(N_BUFS);

    io_uring_for_each_cqe(&r->ring, head, cqe)
    {
        struct sl__ring_op *op = (struct sl__ring_op *)(uintptr_t)cqe->user_data;

        seen++;
        if (cqe->user_data == CANCEL_TAG || op == NULL)
            continue;
        if (cqe->flags & IORING_CQE_F_BUFFER) {
            unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
            char *b = r->bufs + (size_t)bid * BUF_BYTES;
            op->done(op, cqe->res, b, cqe->res > 0 ? (size_t)cqe->res : 0);
            io_uring_buf_ring_add(r->br, b, BUF_BYTES, (unsigned short)bid, mask, (int)given++);
        } else {
            op->done(op, cqe->res, NULL, 0);
        }
    }
    if (given > 0)
        io_uring_buf_ring_advance(r->br, (int)given);
    io_uring_cq_advance(&r->ring, seen);
}

/* Turn one request into a submission; false when the queue has no room
 * even after handing it what it holds. */
static bool fill(struct sl__ring *r, const struct req *q)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

    if (sqe == NULL) {
        io_uring_submit(&r->ring);
        r->prepared = 0;
        sqe = io_uring_get_sqe(&r->ring);
        if (sqe == NULL)
            return false;
    }
    switch (q->kind) {
    case REQ_RECV:
        io_uring_prep_recv(sqe, q->fd, NULL, BUF_BYTES, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = BGID;
        io_uring_sqe_set_data(sqe, q->op);
        break;
    case REQ_SEND:
        io_uring_prep_send(sqe, q->fd, q->p, q->len, MSG_NOSIGNAL);
        io_uring_sqe_set_data(sqe, q->op);
        break;
    case REQ_CANCEL:
        io_uring_prep_cancel(sqe, q->op, 0);
        sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
        io_uring_sqe_set_data64(sqe, CANCEL_TAG);
        break;
    case REQ_NOP:
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data(sqe, q->op);
        break;
    }
    r->prepared++;
    return true;
}

static void put(struct sl__ring *r, struct req q)
{
    if (r->n_later == 0 && !r->held && fill(r, &q))
        return;
    if (r->n_later == r->cap_later) {
        r->cap_later = r->cap_later ? r->cap_later * 2 : 64;
        r->later = sl__xrealloc(r->later, r->cap_later * sizeof(*r->later));
    }
    r->later[r->n_later++] = q;
}

void sl__ring_recv(struct sl__ring *r, struct sl__ring_op *op, int fd)
{
    put(r, (struct req){.kind = REQ_RECV, .op = op, .fd = fd});
}

void sl__ring_send(struct sl__ring *r, struct sl__ring_op *op, int fd, const void *p, size_t len)
{
    put(r, (struct req){.kind = REQ_SEND, .op = op, .fd = fd, .p = p, .len = len});
}

void sl__ring_cancel(struct sl__ring *r, struct sl__ring_op *op)
{
    put(r, (struct req){.kind = REQ_CANCEL, .op = op, .fd = -1});
}

/* Requests that waited for room in the submission queue, into it. */
static void take_later(struct sl__ring *r)
{
    size_t i = 0;

    while (!r->held && i < r->n_later && fill(r, &r->later[i]))
        i++;
    if (i > 0) {
        memmove(r->later, r->later + i, (r->n_later - i) * sizeof(*r->later));
        r->n_later -= i;
    }
}

/* Whether a submission prepared and not yet handed to the kernel names fd
 * (liburing keeps them between sqe_head and sqe_tail). */
static bool prepared_for(const struct sl__ring *r, int fd)
{
    const struct io_uring_sq *sq = &r->ring.sq;

    for (unsigned i = sq->sqe_head; i != sq->sqe_tail; i++) {
        const struct io_uring_sqe *sqe = &sq->sqes[i & sq->ring_mask];
        if (sqe->fd == fd && sqe->opcode != IORING_OP_ASYNC_CANCEL && sqe->opcode != IORING_OP_NOP)
            return true;
    }
    return false;
}

void sl__ring_fd_closing(struct sl__ring *r, int fd)
{
    /* Only when something names it: a connection closed at its peer's EOF
     * has nothing armed, and costs no system call here. */
    take_later(r);
    if (r->prepared > 0 && prepared_for(r, fd)) {
        io_uring_submit(&r->ring);
        r->prepared = 0;
    }
    for (size_t i = 0; i < r->n_later; i++) {
        if (r->later[i].fd == fd && r->later[i].kind != REQ_CANCEL)
            r->later[i].kind = REQ_NOP;
    }
}

void sl__ring_submit(struct sl__ring *r)
{
    /* Sends to sockets with room complete inside the call: deliver them at
     * once rather than after one more epoll_wait, and submit what that
     * delivery prepared (a reply of bytes that came with them). The last
     * round is not reaped: its completions wake the loop through the
     * ring's descriptor, so nothing prepared is left waiting while the
     * loop sleeps. */
    for (int round = 0; round < 4; round++) {
        take_later(r);
        if (r->prepared == 0)
            return;
        io_uring_submit(&r->ring);
        r->prepared = 0;
        if (round < 3)
            reap(r);
    }
}

void sl__ring_hold_submissions(struct sl__ring *r, bool hold)
{
    r->held = hold;
}

void sl__ring_close(struct sl__ring *r)
{
    if (!uv_is_closing((uv_handle_t *)&r->poll))
        uv_close((uv_handle_t *)&r->poll, NULL);
}

void sl__ring_free(struct sl__ring *r)
{
    if (r == NULL)
        return;
    io_uring_queue_exit(&r->ring);
    munmap(r->br, N_BUFS * sizeof(struct io_uring_buf));
    free(r->bufs);
    free(r->later);
    free(r);
}

#else /* !SL_HAVE_URING */

int sl__ring_new(uv_loop_t *loop, struct sl__ring **out, char *why, size_t why_len)
{
    (void)loop;
    *out = NULL;
    snprintf(why, why_len, "built without liburing");
    return -ENOSYS;
}

void sl__ring_close(struct sl__ring *r)
{
    (void)r;
}

void sl__ring_free(struct sl__ring *r)
{
    (void)r;
}

void sl__ring_recv(struct sl__ring *r, struct sl__ring_op *op, int fd)
{
    (void)r, (void)op, (void)fd;
}

void sl__ring_send(struct sl__ring *r, struct sl__ring_op *op, int fd, const void *p, size_t len)
{
    (void)r, (void)op, (void)fd, (void)p, (void)len;
}

void sl__ring_cancel(struct sl__ring *r, struct sl__ring_op *op)
{
    (void)r, (void)op;
}

void sl__ring_fd_closing(struct sl__ring *r, int fd)
{
    (void)r, (void)fd;
}

void sl__ring_submit(struct sl__ring *r)
{
    (void)r;
}

void sl__ring_hold_submissions(struct sl__ring *r, bool hold)
{
    (void)r, (void)hold;
}

#endif
