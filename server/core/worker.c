/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * worker.c - one worker: a thread running its own libuv loop over its own
 * SO_REUSEPORT listening sockets (the kernel spreads connections between
 * workers), with its own store and rules reader, so the hot path shares no
 * lock with other workers.
 *
 * It does not create the sockets (the server does, so that a port 0 is
 * resolved once for every worker) and it does not speak any protocol.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "decide.h"
#include "log.h"
#include "proto.h"
#include "ring.h"
#include "server-t.h"
#include "store.h"
#include "stores.h"
#include "worker.h"
#include "xalloc.h"

#define SWEEP_MS      1000
#define STOP_SWEEP_MS 20

static void on_connection(uv_stream_t *server, int status)
{
    struct sl__worker *w = server->loop->data;

    if (status < 0) {
        sl__warn("conn.accept_failed", "worker %u: accept: %s", w->id, uv_strerror(status));
        return;
    }
    sl__conn_accept(w, server->data, server);
}

static void close_all(struct sl__worker *w)
{
    uv_close((uv_handle_t *)&w->sweep, NULL);
    uv_close((uv_handle_t *)&w->wake, NULL);
    uv_close((uv_handle_t *)&w->flush_check, NULL);
    uv_close((uv_handle_t *)&w->flush_prepare, NULL);
    if (w->ring != NULL)
        sl__ring_close(w->ring); /* no connection is left to complete */
}

/* The end of an iteration's work: write what came outside reads, then
 * hand the ring everything prepared (the reads armed, the writes) in one
 * system call. */
static void end_of_work(struct sl__worker *w)
{
    sl__conn_flush_dirty(w);
    if (w->ring != NULL)
        sl__ring_submit(w->ring);
}

static void on_flush_check(uv_check_t *h)
{
    end_of_work(h->data);
}

static void on_flush_prepare(uv_prepare_t *h)
{
    end_of_work(h->data);
}

/* The connections' I/O: io_uring unless server.io_uring is off or the
 * kernel refuses it (then libuv's readiness loop; `on` makes that an
 * error). Said once, by the first worker. */
static int setup_io(struct sl__worker *w)
{
    char why[160] = "server.io_uring is off";
    enum sl__io_mode mode = w->srv->cfg.io_uring;

    if (mode != SL__IO_OFF && sl__ring_new(&w->loop, &w->ring, why, sizeof(why)) == 0) {
        if (w->id == 0)
            sl__info("server.io", "connections through io_uring");
        return SL_OK;
    }
    if (mode == SL__IO_ON) {
        sl__err("server.io_failed", "server.io_uring is on but io_uring cannot be used: %s", why);
        return SL_EINVAL;
    }
    if (w->id == 0)
        sl__info("server.io", "connections through libuv's readiness loop (%s)", why);
    return SL_OK;
}

static void on_sweep(uv_timer_t *t)
{
    struct sl__worker *w = t->data;
    int64_t now = (int64_t)uv_now(&w->loop);
    struct sl__conn *c, *next;

    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        if (w->stopping && now >= w->stop_deadline_ms)
            sl__conn_abort(c);
        else
            sl__conn_sweep(c, now);
    }
    if (w->stopping && w->conns == NULL)
        close_all(w);
}

static void on_wake(uv_async_t *a)
{
    struct sl__worker *w = a->data;
    struct sl__conn *c, *next;

    if (w->stopping)
        return;
    w->stopping = true;
    w->stop_deadline_ms = (int64_t)uv_now(&w->loop) + w->srv->cfg.shutdown_grace_ms;
    for (size_t i = 0; i < w->n_lsock; i++)
        uv_close((uv_handle_t *)&w->lsock[i], NULL);
    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        sl__conn_drain(c); /* replies already decided are flushed first */
    }
    for (size_t i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i]->worker_stop != NULL)
            sl__protos[i]->worker_stop(w); /* rooms' own handles on this loop */
    uv_timer_start(&w->sweep, on_sweep, 0, STOP_SWEEP_MS);
}

int sl__worker_init(struct sl__worker *w, struct sl__server *srv, unsigned id)
{
    int r;

    w->id = id;
    w->srv = srv;
    if (uv_loop_init(&w->loop) != 0)
        return SL_ENOMEM;
    w->loop.data = w;
    r = setup_io(w);
    if (r != SL_OK)
        return r;
    /* the shared limiter: the memory store's table, a remote store's fallback */
    r = sl__store_new(srv->cfg.store, &w->loop, srv->lim, &w->store);
    if (r != SL_OK)
        return r;
    w->rules = sl_rules_reader_new(srv->rules);
    if (w->rules == NULL)
        return SL_ENOMEM;
    w->matches = sl__xzalloc(sizeof(struct sl_match) * SL_MAX_DESCRIPTORS);
    uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    uv_timer_init(&w->loop, &w->sweep);
    w->sweep.data = w;
    uv_timer_start(&w->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
    /* after the iteration's reads, and before it waits (timers' replies) */
    uv_check_init(&w->loop, &w->flush_check);
    uv_prepare_init(&w->loop, &w->flush_prepare);
    w->flush_check.data = w->flush_prepare.data = w;
    uv_unref((uv_handle_t *)&w->flush_check);
    uv_unref((uv_handle_t *)&w->flush_prepare);
    uv_check_start(&w->flush_check, on_flush_check);
    uv_prepare_start(&w->flush_prepare, on_flush_prepare);
    for (size_t i = 0; i < w->n_lsock; i++) {
        uv_tcp_init(&w->loop, &w->lsock[i]);
        w->lsock[i].data = &srv->cfg.listeners[i];
        r = uv_tcp_open(&w->lsock[i], w->lfd[i]);
        if (r == 0)
            r = uv_listen((uv_stream_t *)&w->lsock[i], 1024, on_connection);
        if (r != 0) {
            sl__err("worker.listen_failed", "worker %u: listen on %s:%u: %s", id,
                    srv->cfg.listeners[i].address, srv->ports[i], uv_strerror(r));
            return SL_EINVAL;
        }
    }
    return SL_OK;
}

static void run(void *arg)
{
    struct sl__worker *w = arg;

    uv_run(&w->loop, UV_RUN_DEFAULT);
    for (size_t i = 0; sl__protos[i] != NULL; i++) /* per-thread scratch, for leak checkers */
        if (sl__protos[i]->thread_exit != NULL)
            sl__protos[i]->thread_exit();
}

int sl__worker_start(struct sl__worker *w)
{
    return uv_thread_create(&w->thread, run, w) == 0 ? SL_OK : SL_ENOMEM;
}

void sl__worker_stop(struct sl__worker *w)
{
    uv_async_send(&w->wake);
}

void sl__worker_join(struct sl__worker *w)
{
    uv_thread_join(&w->thread);
}

void sl__worker_free(struct sl__worker *w)
{
    sl__store_free(w->store); /* closes its handles on the loop first */
    uv_loop_close(&w->loop);
    sl__ring_free(w->ring);
    sl_rules_reader_free(w->rules);
    free(w->matches);
    sl__decide_batch_free(w);
    sl__buf_free(&w->reply);
    sl__buf_free(&w->areply);
}

const char *sl__worker_unready(struct sl__worker *w, const char **degraded)
{
    char *why = w->unready_why, *text = w->unready_text;
    enum sl__stores_state st;

    if (degraded != NULL)
        *degraded = "";
    if (sl__worker_rules(w) == NULL)
        return "no rules loaded";
    st = sl__server_stores_health(w->srv, why, sizeof(w->unready_why));
    if (st == SL__STORES_UP)
        return NULL;
    if (st == SL__STORES_DEGRADED && w->srv->cfg.readyz != SL__READYZ_STORE) {
        if (degraded != NULL)
            *degraded = why;
        return NULL;
    }
    snprintf(text, sizeof(w->unready_text), "%s%s", st == SL__STORES_STARTING ? "starting: " : "",
             why);
    return text;
}
