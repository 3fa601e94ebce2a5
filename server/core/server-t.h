/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * server-t.h - the types of the whole daemon: configuration, the shared
 * limiter and rules slot, the workers, and the main thread's signal and file
 * watching handles (internal).
 */
#ifndef SL_SERVER_SERVER_T_H
#define SL_SERVER_SERVER_T_H

#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include "config-t.h"
#include "killswitch-t.h"
#include "rules_dir.h"
#include "sluice.h"

/* Slots of the per-address connection counts (server.max_connections_per_ip). */
#define SL__PER_IP_SLOTS 65536

struct sl__worker;
struct sl__metrics;
struct sl__stats;
struct sl__store_rules_sub;
struct sl__tls_watch;

struct sl__server {
    struct sl__config cfg;
    sl_limiter *lim;
    sl_rules_slot *rules;
    struct sl__worker *workers;
    unsigned n_workers;
    atomic_uint n_conns;               /* open connections over all workers */
    _Atomic int64_t buffer_bytes;      /* memory of every connection's buffers */
    _Atomic uint32_t *per_ip;          /* open connections per address hash, or NULL */
    struct sl__guard *guard;           /* failed admin credentials per address, or NULL */
    uint8_t ip_secret[16];             /* key of that hash */
    uint16_t ports[SL__MAX_LISTENERS]; /* bound ports, per listener */

    uv_loop_t *loop; /* the main thread's: signals, reload, watching */
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_fs_event_t watch[SL__MAX_RULE_FILES * 2 + SL__MAX_RULE_DIRS * 2];
    size_t n_watch;
    int dir_watch[SL__MAX_RULE_DIRS][2]; /* watch[] of each rules directory and its parent, or -1 */
    void (*rules_changed)(struct sl__server *srv, const char *why); /* watch.c's call */
    uv_timer_t debounce;
    struct sl__tls_watch *tls_watch; /* certificate files' watches (tls_watch.c), or NULL */
    /* Reloads asked of the main loop run one at a time on libuv's work
     * queue; one asked meanwhile sets `reload_pending` and runs after it
     * (main thread only, both). */
    uv_work_t reload_work;
    bool reload_running, reload_pending;
    const char *reload_why, *pending_why; /* static strings: the triggers */
    atomic_bool stopping;                 /* SIGTERM/SIGINT seen: reloads end early */
    _Atomic uint64_t reload_requests;     /* reloads asked of the main loop (metrics) */
    _Atomic uint64_t reloads_coalesced;   /* of them, folded into a pending one (metrics) */
    _Atomic uint64_t reloads;             /* successful reloads (metrics) */
    _Atomic uint64_t reload_failures;     /* rejected reloads (metrics) */
    struct sl__metrics *metrics;          /* the registry, one block per worker */
    struct sl__stats *stats;              /* the operator's statistics; NULL: stats.enabled off */
    struct sl__ks ks;                     /* kill switches (admin API) */
    struct sl__store_rules_sub *rsync;    /* rules from other nodes, or NULL (store.h) */
    uv_mutex_t reload_lock;               /* one reload or admin change at a time */
    /* The listing of each rules directory the serving rules were read
     * from (cfg.n_rules_dirs of them), for the admin API; replaced after
     * each successful reload under `dirs_lock`. */
    struct sl__rules_dir dirs_read[SL__MAX_RULE_DIRS];
    uv_mutex_t dirs_lock;
    int exit_code;
};

#endif /* SL_SERVER_SERVER_T_H */
