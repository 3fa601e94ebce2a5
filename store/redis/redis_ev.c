/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_ev.c - how the store's data connections wait on the worker's libuv
 * loop: hiredis's event hooks (redisAsyncContext.ev) written for this
 * store instead of hiredis's libuv adapter, for two costs that adapter has
 * on every call:
 *
 *  - hiredis asks for a write event per command (addWrite) and drops it
 *    once the output is written (delWrite); the adapter restarts its
 *    uv_poll_t each time, and libuv turns every restart into two
 *    epoll_ctl calls (an ADD that fails with EEXIST, then a MOD). Under
 *    pipelined traffic that was 15 epoll_ctl calls per read.
 *  - the commands of one loop iteration were written when the write event
 *    came back, one iteration later.
 *
 * Here a connected context's commands are written at the end of the loop
 * iteration in which they were made (a uv_check and a uv_prepare of the
 * store flush every connection with output: one write for every command
 * the iteration's reads decided), and the poll handle is restarted only
 * when the events it watches change: readable always, writable only while
 * the kernel's socket buffer is full. Until the connection is made, and
 * whenever a write could not finish, hiredis's own write event is used.
 *
 * It does not read, parse or decide anything; redis_conn.c attaches it.
 */
#include <stdlib.h>

#include "redis_int.h"

struct sl__rev {
    redisAsyncContext *ac; /* NULL once hiredis cleaned up */
    struct sl__rstore *st;
    uv_poll_t poll;
    int events;    /* what the poll handle watches now */
    bool queued;   /* in st->wq: to write at the end of the iteration */
    bool flushing; /* in redisAsyncHandleWrite from the flush */
    struct sl__rev *prev, *next;
};

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sl__rev *p = h->data;

    if (status != 0) {
        /* libuv stopped the handle (POLLERR): hiredis reads the error and
         * disconnects, or asks to read again (and the handle restarts) */
        p->events = 0;
        if (p->ac != NULL)
            redisAsyncHandleRead(p->ac);
        return;
    }
    if (p->ac != NULL && (events & UV_READABLE))
        redisAsyncHandleRead(p->ac);
    if (p->ac != NULL && (events & UV_WRITABLE))
        redisAsyncHandleWrite(p->ac);
}

static void watch(struct sl__rev *p, int events)
{
    if (events == p->events)
        return;
    p->events = events;
    if (events != 0)
        uv_poll_start(&p->poll, events, on_poll);
    else
        uv_poll_stop(&p->poll);
}

static void dequeue(struct sl__rev *p)
{
    if (!p->queued)
        return;
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        p->st->wq = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->queued = false;
}

static void add_read(void *arg)
{
    struct sl__rev *p = arg;

    watch(p, p->events | UV_READABLE);
}

static void del_read(void *arg)
{
    struct sl__rev *p = arg;

    watch(p, p->events & ~UV_READABLE);
}

static void add_write(void *arg)
{
    struct sl__rev *p = arg;

    if (!(p->ac->c.flags & REDIS_CONNECTED) || p->flushing || (p->events & UV_WRITABLE)) {
        /* connecting, or the socket is full: the kernel says when */
        watch(p, p->events | UV_WRITABLE);
        return;
    }
    if (!p->queued) {
        p->queued = true;
        p->prev = NULL;
        p->next = p->st->wq;
        if (p->st->wq != NULL)
            p->st->wq->prev = p;
        p->st->wq = p;
    }
}

static void del_write(void *arg)
{
    struct sl__rev *p = arg;

    dequeue(p);
    watch(p, p->events & ~UV_WRITABLE);
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void cleanup(void *arg)
{
    struct sl__rev *p = arg;

    dequeue(p);
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->poll, on_closed);
}

int sl__rev_attach(struct sl__rstore *st, redisAsyncContext *ac)
{
    struct sl__rev *p;

    if (ac->ev.data != NULL)
        return REDIS_ERR;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return REDIS_ERR;
    if (uv_poll_init(st->loop, &p->poll, ac->c.fd) != 0) {
        free(p);
        return REDIS_ERR;
    }
    p->ac = ac;
    p->st = st;
    p->poll.data = p;
    uv_unref((uv_handle_t *)&p->poll); /* the store's calls keep the loop alive, not this */
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    ac->ev.data = p;
    return REDIS_OK;
}

/* Write what every queued connection has. A write that cannot finish asks
 * for the write event (add_write while flushing); one that fails frees its
 * context, whose cleanup leaves the queue. */
static void flush(struct sl__rstore *st)
{
    while (st->wq != NULL) {
        struct sl__rev *p = st->wq;
        dequeue(p);
        p->flushing = true;
        redisAsyncHandleWrite(p->ac);
        p->flushing = false;
    }
}

static void on_check(uv_check_t *h)
{
    flush(h->data);
}

static void on_prepare(uv_prepare_t *h)
{
    flush(h->data);
}

void sl__rev_init(struct sl__rstore *st)
{
    uv_check_init(st->loop, &st->wcheck);
    uv_prepare_init(st->loop, &st->wprepare);
    st->wcheck.data = st->wprepare.data = st;
    uv_unref((uv_handle_t *)&st->wcheck);
    uv_unref((uv_handle_t *)&st->wprepare);
    /* after the reads of an iteration, and before it waits (timers) */
    uv_check_start(&st->wcheck, on_check);
    uv_prepare_start(&st->wprepare, on_prepare);
    st->wq = NULL;
    st->w_started = true;
}

void sl__rev_close(struct sl__rstore *st)
{
    if (!st->w_started)
        return;
    flush(st);
    uv_close((uv_handle_t *)&st->wcheck, NULL);
    uv_close((uv_handle_t *)&st->wprepare, NULL);
    st->w_started = false;
}
