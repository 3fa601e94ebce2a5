/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * server.h - the daemon as a whole (internal): start every worker, serve
 * until SIGTERM/SIGINT, reload rules on SIGHUP and on file changes. Types in
 * server-t.h.
 */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include "config.h"
#include "server-t.h"

/*
 * Run sluiced with `cfg` (moved into the server; freed at exit) until a
 * termination signal. Returns the process exit code: 0 after a graceful
 * shutdown, 1 when it could not start (the reason is logged).
 */
int sl__server_run(struct sl__config *cfg);

/* Ask for a reload of the rules (SIGHUP, a file change, rules from other
 * nodes; `why`, a static string, names it in the log). Main thread only;
 * returns at once. The reload runs on libuv's work queue, so the main loop
 * (and SIGTERM) is never held by it; asked while one runs, one more runs
 * after it, however many times it was asked (coalesced). Nothing starts
 * once the server is stopping. */
void sl__server_request_reload(struct sl__server *srv, const char *why);

/* The reload lock, for a change that must be stored and reloaded with no
 * other reload in between (the admin API), and the reload under it: it
 * blocks (files, the rules database), so off the event loops; counted for
 * the metrics. 0 or the reload's error. */
void sl__server_reload_lock(struct sl__server *srv);
void sl__server_reload_unlock(struct sl__server *srv);
int sl__server_reload_locked(struct sl__server *srv, const char *why);

/* Call fn with the listing of every rules directory the serving rules
 * were read from (cfg.n_rules_dirs of them), under a lock held only for
 * the call: fn must not block. Any thread. */
void sl__server_rules_dirs(const struct sl__server *srv,
                           void (*fn)(void *arg, const struct sl__rules_dir *dirs, size_t n),
                           void *arg);

/* The scrape-time values of /metrics that the server holds (the state
 * table's counters, reloads). Any thread. */
struct sl__metrics_gauges;
void sl__server_gauges(struct sl__server *srv, struct sl__metrics_gauges *g);

/* Start and stop watching the rules files (watch.c), main thread only;
 * `changed` is called (debounced) when one changes. */
void sl__watch_start(struct sl__server *srv,
                     void (*changed)(struct sl__server *srv, const char *why));
void sl__watch_stop(struct sl__server *srv);
/* Watch the rules directories (and their parents) again, after a reload:
 * one that is a new directory now is watched from then on. Main thread. */
void sl__watch_refresh(struct sl__server *srv);

/* The listeners' certificates (tls_watch.c): rotate every TLS listener's
 * now (SIGHUP), and watch their files to rotate on a change. Main thread. */
void sl__tls_reload_all(struct sl__server *srv, const char *why);
void sl__tls_watch_start(struct sl__server *srv);
void sl__tls_watch_stop(struct sl__server *srv);

#endif /* SL_SERVER_SERVER_H */
