/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * worker-t.h - the types of a worker: one thread, one libuv loop, its own
 * listening sockets (SO_REUSEPORT), connections, rules reader and store
 * (internal).
 */
#ifndef SL_SERVER_WORKER_T_H
#define SL_SERVER_WORKER_T_H

#include <stdbool.h>
#include <uv.h>

#include "config-t.h"
#include "conn-t.h"
#include "sluice.h"

struct sl__server;
struct sl__store;
struct sl__conn;
struct sl__decide_batch;

struct sl__worker {
    unsigned id;
    struct sl__server *srv;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t wake;  /* the main thread asks the worker to stop */
    uv_timer_t sweep; /* idle/read timeouts, once a second */

    uv_tcp_t lsock[SL__MAX_LISTENERS]; /* listening handles */
    int lfd[SL__MAX_LISTENERS];        /* their sockets, made by the server */
    size_t n_lsock;

    sl_rules_reader *rules;
    struct sl__store *store;
    /* Scratch for resolving one request (a protocol fills it and hands it to
     * the store within one call; never kept across calls). */
    struct sl_match *matches; /* SL_MAX_DESCRIPTORS */
    /* Reply scratch for protocols: `reply` for replies made while a command
     * runs, `areply` for replies made in store callbacks (which may run
     * inside a command). Reused, freed when the worker ends. */
    struct sl__buf reply, areply;
    /* A result the decision path edited before handing it on (a kill
     * switch's, decide.c), valid for the duration of the protocol's
     * callback. */
    struct sl_result edited;
    /* A decision answered inside its call (decide.c: struct sl__decided),
     * copied out of the store's frame; valid until the next decision. */
    struct sl_result answer;
    /* Checks queued by the decision path (decide.c), NULL until first used. */
    struct sl__decide_batch *batch;
    /* Why the worker is not ready, as sl__worker_unready() says it. */
    char unready_why[192], unready_text[224];

    struct sl__conn *conns; /* list of open connections */
    /* Connections with replies made outside their reads (sl__conn_flush_dirty
     * writes them after the iteration's reads and before it waits). */
    struct sl__conn *dirty;
    /* The connections' reads and writes through io_uring (ring.h); NULL:
     * libuv's readiness loop (server.io_uring off, or refused here). */
    struct sl__ring *ring;
    uv_check_t flush_check;
    uv_prepare_t flush_prepare;
    unsigned n_conns;
    bool stopping;
    int64_t stop_deadline_ms; /* loop time after which the rest are aborted */
};

#endif /* SL_SERVER_WORKER_T_H */
