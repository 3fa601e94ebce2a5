/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * server.c - the daemon as a whole: the shared limiter (its table's secret
 * drawn from the kernel), the first rules snapshot, the listening sockets,
 * the workers, and the main thread's loop for signals and reloads: a
 * reload runs on libuv's work queue, one at a time, and those asked while
 * one runs coalesce into one more, so the loop always answers SIGTERM.
 *
 * It does not handle connections (workers do) or parse rules (the library
 * does). The main loop never touches a request, and never reads a file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "guard.h"
#include "killswitch.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "privdrop.h"
#include "proto.h"
#include "rules_load.h"
#include "server.h"
#include "stats.h"
#include "store.h"
#include "tls.h"
#include "stores.h"
#include "worker.h"
#include "xalloc.h"

static int draw_secret(uint8_t *secret, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom(secret + got, len - got, 0);
        if (n < 0 && errno != EINTR) {
            sl__err("server.random_failed", "getrandom: %s", strerror(errno));
            return SL_EINVAL;
        }
        if (n > 0)
            got += (size_t)n;
    }
    return SL_OK;
}

static int make_limiter(struct sl__server *srv)
{
    struct sl_limiter_config lc;
    int r;

    sl_limiter_config_init(&lc);
    lc.table.max_bytes = srv->cfg.store_max_bytes;
    lc.table.shards = srv->cfg.store_shards;
    lc.table.on_full = srv->cfg.store_on_full;
    r = draw_secret(lc.table.secret, sizeof(lc.table.secret));
    if (r == SL_OK)
        r = sl_limiter_new(&lc, &srv->lim);
    if (r != SL_OK)
        sl__err("server.table_failed", "state table: %s", sl_strerror(r));
    return r;
}

/* The operator's statistics (stats.h), unless stats.enabled is off. */
static int make_stats(struct sl__server *srv)
{
    const struct sl__stats_config *sc = sl__config_room(&srv->cfg, &sl__stats_config_section);
    uint8_t secret[16];
    int r = draw_secret(secret, sizeof(secret));

    if (r == SL_OK)
        r = sl__stats_new(sc, srv->n_workers, secret, &srv->stats);
    if (r != SL_OK)
        sl__err("stats.failed", "stats: %s", sl_strerror(r));
    else if (srv->stats != NULL)
        sl__info("stats.ready", "stats: %zu bytes for %u workers", sl__stats_bytes(srv->stats),
                 srv->n_workers);
    return r;
}

/* The metrics registry (one block per worker), the operator's statistics
 * and the kill switches, each keyed by its own random secret. */
static int make_registries(struct sl__server *srv)
{
    struct sl__metrics_config mc = {.workers = srv->n_workers,
                                    .series_cap = srv->cfg.metrics_max_series};
    uint8_t ks_secret[16];
    int r = draw_secret(mc.secret, sizeof(mc.secret));

    if (r == SL_OK)
        r = draw_secret(ks_secret, sizeof(ks_secret));
    if (r == SL_OK)
        r = sl__metrics_new(&mc, &srv->metrics);
    if (r != SL_OK) {
        sl__err("server.metrics_failed", "metrics: %s (metrics.max_series must be 1..16777216)",
                sl_strerror(r));
        return r;
    }
    if (srv->cfg.admin_max_failures > 0) {
        uint8_t secret[16];
        if (draw_secret(secret, sizeof(secret)) != SL_OK)
            return SL_EINVAL;
        srv->guard = sl__guard_new(srv->cfg.admin_max_failures, secret);
        if (srv->guard == NULL) {
            sl__err("server.guard_failed", "admin.max_failures: no memory for its table");
            return SL_ENOMEM;
        }
    }
    if (srv->cfg.max_conns_per_ip > 0) {
        srv->per_ip = sl__xzalloc(SL__PER_IP_SLOTS * sizeof(*srv->per_ip));
        if (draw_secret(srv->ip_secret, sizeof(srv->ip_secret)) != SL_OK)
            return SL_EINVAL;
    }
    if (make_stats(srv) != SL_OK)
        return SL_EINVAL;
    sl__ks_init(&srv->ks, ks_secret);
    if (srv->cfg.rules_shadow_mode) /* global shadow mode: the "*" kill switch from the start */
        sl__ks_set(&srv->ks, (struct sl_str){"*", 1}, SL__KS_SHADOW);
    return SL_OK;
}

void sl__server_reload_lock(struct sl__server *srv)
{
    uv_mutex_lock(&srv->reload_lock);
}

void sl__server_reload_unlock(struct sl__server *srv)
{
    uv_mutex_unlock(&srv->reload_lock);
}

/* The listings of a load that succeeded become the server's (the old
 * ones are freed). */
static void set_dirs_read(struct sl__server *srv, struct sl__rules_dir *dirs)
{
    struct sl__rules_dir old[SL__MAX_RULE_DIRS];
    size_t n = srv->cfg.n_rules_dirs;

    uv_mutex_lock(&srv->dirs_lock);
    memcpy(old, srv->dirs_read, n * sizeof(old[0]));
    memcpy(srv->dirs_read, dirs, n * sizeof(old[0]));
    uv_mutex_unlock(&srv->dirs_lock);
    for (size_t i = 0; i < n; i++)
        sl__rules_dir_free(&old[i]);
}

void sl__server_rules_dirs(const struct sl__server *srv,
                           void (*fn)(void *arg, const struct sl__rules_dir *dirs, size_t n),
                           void *arg)
{
    uv_mutex_t *lock = (uv_mutex_t *)&srv->dirs_lock; /* the lock is no part of its value */

    uv_mutex_lock(lock);
    fn(arg, srv->dirs_read, srv->cfg.n_rules_dirs);
    uv_mutex_unlock(lock);
}

int sl__server_reload_locked(struct sl__server *srv, const char *why)
{
    struct sl__rules_dir dirs[SL__MAX_RULE_DIRS];
    int r;

    memset(dirs, 0, sizeof(dirs));
    r = sl__rules_reload(&srv->cfg, srv->rules, why, &srv->stopping, dirs);
    if (r == SL_OK)
        set_dirs_read(srv, dirs);
    if (r != SL__RULES_STOPPED)
        atomic_fetch_add(r == SL_OK ? &srv->reloads : &srv->reload_failures, 1);
    return r;
}

/* On the work queue: one reload, serialised with the admin API's. */
static void reload_work(uv_work_t *w)
{
    struct sl__server *srv = w->data;

    sl__server_reload_lock(srv);
    sl__server_reload_locked(srv, srv->reload_why);
    sl__server_reload_unlock(srv);
}

static void start_reload(struct sl__server *srv, const char *why);

/* Back on the main loop: the one reload asked meanwhile, if any. */
static void reload_done(uv_work_t *w, int status)
{
    struct sl__server *srv = w->data;

    srv->reload_running = false;
    if (!atomic_load(&srv->stopping))
        sl__watch_refresh(srv);
    if (srv->reload_pending && !atomic_load(&srv->stopping)) {
        srv->reload_pending = false;
        start_reload(srv, srv->pending_why);
    }
}

static void start_reload(struct sl__server *srv, const char *why)
{
    srv->reload_running = true;
    srv->reload_why = why;
    srv->reload_work.data = srv;
    if (uv_queue_work(srv->loop, &srv->reload_work, reload_work, reload_done) != 0) {
        srv->reload_running = false; /* not reached: the loop is alive */
        atomic_fetch_add(&srv->reload_failures, 1);
        sl__err("rules.reload_failed",
                "rules: reload on %s could not be queued; the previous rules keep serving", why);
    }
}

void sl__server_request_reload(struct sl__server *srv, const char *why)
{
    atomic_fetch_add(&srv->reload_requests, 1);
    if (atomic_load(&srv->stopping))
        return;
    if (!srv->reload_running) {
        start_reload(srv, why);
    } else if (!srv->reload_pending) {
        srv->reload_pending = true;
        srv->pending_why = why;
        sl__dbg("rules.reload_queued", "rules: reload on %s asked while one runs: it runs next",
                why);
    } else {
        atomic_fetch_add(&srv->reloads_coalesced, 1);
        sl__dbg("rules.reload_coalesced",
                "rules: reload on %s asked while one runs and one waits: that one serves it", why);
    }
}

void sl__server_gauges(struct sl__server *srv, struct sl__metrics_gauges *g)
{
    struct sl_table_stats ts;

    sl_table_stats(sl_limiter_table(srv->lim), &ts);
    g->table_entries = ts.entries;
    g->table_bytes = ts.bytes;
    g->table_max_bytes = srv->cfg.store_max_bytes;
    g->table_evictions = ts.evictions;
    g->table_evictions_denying = ts.evictions_denying;
    g->table_full_denials = ts.full_denials;
    g->table_summary_folds = ts.summary_folds;
    g->table_summary_restores = ts.summary_restores;
    g->table_summary_cells = ts.summary_cells;
    g->table_summary_used = ts.summary_used;
    g->reloads = atomic_load(&srv->reloads);
    g->reload_failures = atomic_load(&srv->reload_failures);
    g->reload_requests = atomic_load(&srv->reload_requests);
    g->reloads_coalesced = atomic_load(&srv->reloads_coalesced);
    g->buffer_bytes = (uint64_t)atomic_load(&srv->buffer_bytes);
    sl__tls_reload_counts(&g->tls_reloads_ok, &g->tls_reloads_failed);
    g->tls = false;
    g->n_tls_certs = 0;
    for (size_t i = 0; i < srv->cfg.n_listeners; i++) {
        const struct sl__listener *l = &srv->cfg.listeners[i];
        if (l->tls == NULL)
            continue;
        g->tls = true;
        for (size_t j = 0; j < l->tls->n_certs && g->n_tls_certs < SL__METRICS_TLS_CERTS; j++)
            g->tls_certs[g->n_tls_certs++] = (struct sl__metrics_tls_cert){
                .address = l->address,
                .port = srv->ports[i],
                .cert_file = l->tls->certs[j].cert_file,
                .not_after = atomic_load(&l->tls->not_after[j]),
            };
    }
}

static unsigned worker_count(const struct sl__config *cfg)
{
    long n = cfg->workers ? (long)cfg->workers : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

/* One socket per worker and listener, all on the same port. */
static int make_sockets(struct sl__server *srv)
{
    char err[256];

    for (size_t l = 0; l < srv->cfg.n_listeners; l++) {
        uint16_t port = srv->cfg.listeners[l].port;
        for (unsigned i = 0; i < srv->n_workers; i++) {
            int fd = i == 0
                         ? sl__listen_socket(srv->cfg.listeners[l].address, &port, err, sizeof(err))
                         : sl__listen_socket_shared(srv->cfg.listeners[l].address, &port, err,
                                                    sizeof(err));
            if (fd < 0) {
                sl__err("server.listen_failed", "listen: %s", err);
                return SL_EINVAL;
            }
            srv->workers[i].lfd[l] = fd;
            srv->workers[i].n_lsock = l + 1;
        }
        srv->ports[l] = port;
    }
    return SL_OK;
}

static void on_stop_signal(uv_signal_t *s, int signum)
{
    struct sl__server *srv = s->data;

    sl__info("server.stopping", "%s: stopping (no new connections; in-flight replies flushed)",
             signum == SIGTERM ? "SIGTERM" : "SIGINT");
    /* A reload in flight ends any wait for a file to hold still (and then
     * publishes nothing); one queued or asked meanwhile never starts. */
    atomic_store(&srv->stopping, true);
    srv->reload_pending = false;
    if (srv->reload_running)
        uv_cancel((uv_req_t *)&srv->reload_work); /* fails if it has started: fine */
    for (unsigned i = 0; i < srv->n_workers; i++)
        sl__worker_stop(&srv->workers[i]);
    uv_close((uv_handle_t *)&srv->sig_term, NULL);
    uv_close((uv_handle_t *)&srv->sig_int, NULL);
    uv_close((uv_handle_t *)&srv->sig_hup, NULL);
    sl__watch_stop(srv);
    sl__tls_watch_stop(srv);
    sl__store_rules_unsubscribe(srv->rsync);
    srv->rsync = NULL;
    sl__protos_main_stop(srv);
}

static void on_hup(uv_signal_t *s, int signum)
{
    sl__server_request_reload(s->data, "SIGHUP");
    /* The certificates rotate here on the main loop: a build reads a few
     * files, and the workers never wait for it. */
    sl__tls_reload_all(s->data, "SIGHUP");
}

static void start_signals(struct sl__server *srv)
{
    uv_signal_t *sigs[] = {&srv->sig_term, &srv->sig_int, &srv->sig_hup};
    int nums[] = {SIGTERM, SIGINT, SIGHUP};

    for (int i = 0; i < 3; i++) {
        uv_signal_init(srv->loop, sigs[i]);
        sigs[i]->data = srv;
        uv_signal_start(sigs[i], nums[i] == SIGHUP ? on_hup : on_stop_signal, nums[i]);
    }
    signal(SIGPIPE, SIG_IGN);
}

static void on_rules_synced(void *arg)
{
    sl__server_request_reload(arg, "rules from other nodes");
}

/* Rules across nodes (a store that shares rules): apply what other nodes
 * publish into our rules database, which it needs. */
static int start_rules_sync(struct sl__server *srv)
{
    if (!sl__store_rules_shared(srv->cfg.store))
        return SL_OK;
    if (srv->cfg.rules_db == NULL) {
        sl__err("rules.sync_needs_database",
                "the store shares rules across nodes: that needs rules.database (where the "
                "rules are kept)");
        return SL_EINVAL;
    }
    return sl__store_rules_subscribe(srv->cfg.store, srv->loop, srv->cfg.rules_db, on_rules_synced,
                                     srv, &srv->rsync);
}

static void print_ports(const struct sl__server *srv)
{
    for (size_t l = 0; l < srv->cfg.n_listeners; l++) {
        const struct sl__listener *ls = &srv->cfg.listeners[l];
        char names[128];
        sl__proto_names(ls->protos, names, sizeof(names));
        struct sl__log_field f[] = {
            SL__LOG_STR("address", ls->address), SL__LOG_INT("port", srv->ports[l]),
            SL__LOG_STR("protocols", names), SL__LOG_INT("workers", srv->n_workers)};
        sl__log_fields(SL__LOG_INFO, "server.listening", f, 4,
                       "listening on %s:%u (%s), %u workers", ls->address, srv->ports[l], names,
                       srv->n_workers);
    }
    sl__info("server.ready", "ready");
    sd_notify(0, "READY=1"); /* Type=notify under systemd; nothing without $NOTIFY_SOCKET */
}

static int start(struct sl__server *srv)
{
    struct sl__rules_load how = {.reload = false, .stop = NULL, .dirs = srv->dirs_read};
    sl_rules *rules = NULL;
    int r;

    if (!sl__proto_registered()) { /* a build error: the two registrations disagree */
        sl__err("server.registration", "sl__protos and sl__proto_names_reg disagree "
                                       "(server/protocols.c, server/config_sections.c)");
        return 1;
    }
    if (make_limiter(srv) != SL_OK)
        return 1;
    if (sl__rules_load(&srv->cfg, &how, &rules) != SL_OK) {
        sl__err("rules.start_failed",
                "rules: cannot start without valid rules (fix the lines above)");
        return 1;
    }
    srv->rules = sl_rules_slot_new(rules);
    srv->n_workers = worker_count(&srv->cfg);
    srv->workers = sl__xzalloc(srv->n_workers * sizeof(*srv->workers));
    sl__server_stores_log_to_server(srv);
    if (make_registries(srv) != SL_OK)
        return 1;
    if (make_sockets(srv) != SL_OK)
        return 1;
    if (sl__drop_privileges(srv->cfg.user) != SL_OK)
        return 1;
    for (unsigned i = 0; i < srv->n_workers; i++) {
        r = sl__worker_init(&srv->workers[i], srv, i);
        if (r != SL_OK) {
            sl__err("worker.init_failed", "worker %u: %s", i, sl_strerror(r));
            return 1;
        }
    }
    start_signals(srv);
    sl__watch_start(srv, sl__server_request_reload);
    sl__tls_watch_start(srv);
    if (start_rules_sync(srv) != SL_OK)
        return 1;
    if (sl__protos_main_start(srv) != 0)
        return 1;
    for (unsigned i = 0; i < srv->n_workers; i++)
        if (sl__worker_start(&srv->workers[i]) != SL_OK)
            return 1;
    print_ports(srv);
    return 0;
}

int sl__server_run(struct sl__config *cfg)
{
    struct sl__server *srv = sl__xzalloc(sizeof(*srv));
    uv_loop_t loop;
    int code;

    srv->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    uv_mutex_init(&srv->reload_lock);
    uv_mutex_init(&srv->dirs_lock);
    atomic_init(&srv->stopping, false);
    uv_loop_init(&loop);
    srv->loop = &loop;
    code = start(srv);
    if (code != 0)
        _exit(code); /* nothing half-started is worth unwinding */
    uv_run(&loop, UV_RUN_DEFAULT);
    /* Every thread ends before any store is freed: a worker still serving
     * /v1/stats or /metrics reads the other workers' stores. */
    for (unsigned i = 0; i < srv->n_workers; i++)
        sl__worker_join(&srv->workers[i]);
    for (unsigned i = 0; i < srv->n_workers; i++)
        sl__worker_free(&srv->workers[i]);
    uv_loop_close(&loop);
    sl_rules_slot_free(srv->rules);
    sl_limiter_free(srv->lim);
    sl__metrics_free(srv->metrics);
    sl__stats_free(srv->stats);
    sl__ks_destroy(&srv->ks);
    free((void *)srv->per_ip);
    sl__guard_free(srv->guard);
    uv_mutex_destroy(&srv->reload_lock);
    for (size_t i = 0; i < srv->cfg.n_rules_dirs; i++)
        sl__rules_dir_free(&srv->dirs_read[i]);
    uv_mutex_destroy(&srv->dirs_lock);
    free(srv->workers);
    sl__config_free(&srv->cfg);
    free(srv);
    sl__info("server.stopped", "stopped");
    return 0;
}
