/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * worker.h - starting and stopping workers, and what a protocol may ask its
 * worker for (internal). Types in worker-t.h.
 */
#ifndef SL_SERVER_WORKER_H
#define SL_SERVER_WORKER_H

#include "worker-t.h"

/* Prepare worker `id` of `srv` (loop, store, rules reader); its listening
 * sockets must be in w->lfd. 0 or a negative SL_E* code. */
int sl__worker_init(struct sl__worker *w, struct sl__server *srv, unsigned id);
/* Run the worker's loop on its own thread. */
int sl__worker_start(struct sl__worker *w);
/* Ask it to stop (thread-safe): stop listening, flush, exit the loop. */
void sl__worker_stop(struct sl__worker *w);
/* Wait for the thread to end. */
void sl__worker_join(struct sl__worker *w);
/* Free everything of a joined worker. Only once every worker is joined: a
 * running worker may read every worker's store (health, metrics). */
void sl__worker_free(struct sl__worker *w);

/* The current rules snapshot (never NULL while the server runs); valid
 * until the next call on this worker. Inline: the decision path reads it
 * for every request, and worker.c (which calls the decision path's batch
 * teardown) is not to be called back from there. */
static inline const sl_rules *sl__worker_rules(struct sl__worker *w)
{
    return sl_rules_reader_get(w->rules);
}

/*
 * What /readyz and gRPC's health check both answer from: NULL when the
 * server is ready for traffic as seen from this worker, else why not ("no
 * rules loaded", "redis 10.0.0.5:6379 unreachable"). Ready while checks are
 * decided: by the store, or - http.readyz: decisions, the default - by a
 * local or allow failure policy standing in for it, when *degraded (may be
 * NULL) says why; else *degraded is "". Not ready while the store is
 * starting ("starting: ..."). The strings are the worker's, valid until
 * its next call.
 */
const char *sl__worker_unready(struct sl__worker *w, const char **degraded);

#endif /* SL_SERVER_WORKER_H */
