/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rmaster.h - the master a set of sentinels names, followed (internal):
 * the one Sentinel client of everything in the stores that talks to a
 * Redis behind Sentinel - the Redis store, the hybrid store's sync and the
 * rules subscriber.
 *
 * A follower keeps two links (rlink.h) to one sentinel at a time:
 *  - a subscriber to +switch-master, whose messages ("<name> <old ip>
 *    <old port> <new ip> <new port>") name a new master at once;
 *  - a questioner asking SENTINEL get-master-addr-by-name <name>: at
 *    start, after each (re)subscription (so that no switch is missed
 *    between the two), and whenever its owner asks it to (the master was
 *    lost, or says it is not one), never two questions closer than
 *    gap_ms (later requests fold into one).
 * A sentinel that cannot be reached, does not answer within probe_ms or
 * does not know the name is left for the next one in the list, after a
 * wait of the links' backoff (sl__rbackoff).
 *
 * It reports upward and decides nothing for its owner: `master` for every
 * answer and every switch (the same address again included: the owner
 * compares), `note` for what its owner may log (each sentinel's loss and
 * return are edges: said once each way), `changed` when what a health view
 * shows (subscribed, failed, the sentinel in use) changed. It does not
 * talk to the master and does not authenticate to the sentinels: the
 * link configuration given should carry TLS but no AUTH.
 *
 * Threads: one loop's, as the links. Callbacks may call sl__rmaster_ask
 * and sl__rmaster_free.
 */
#ifndef SL_STORE_RMASTER_H
#define SL_STORE_RMASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rcluster_map.h"
#include "rlink.h"

#define SL__RMASTER_MAX 8 /* sentinels followed */

struct sl__rmaster_conf {
    const char *name;                       /* the master's name (borrowed) */
    struct sl__cnode addr[SL__RMASTER_MAX]; /* the sentinels */
    unsigned n;
    int64_t probe_ms; /* an answer, a subscription's confirmation */
    int64_t gap_ms;   /* between two questions */
    int64_t backoff_min_ms, backoff_max_ms;
    const struct sl__rlink_conf *link; /* TLS, no AUTH (borrowed) */
};

enum sl__rmaster_note {
    SL__RMASTER_FOLLOWING,   /* subscribed through sentinel `at` (every time) */
    SL__RMASTER_UNREACHABLE, /* sentinel `at` lost, or never reached (an edge) */
    SL__RMASTER_BACK,        /* sentinel `at` answers again (an edge) */
    SL__RMASTER_NO_MASTER,   /* sentinel `at` does not name the master (text: its error or "") */
    SL__RMASTER_TLS,         /* TLS with sentinel `at` failed (text: why) */
};

struct sl__rmaster_events {
    /* Sentinel `via` names host:port the master (an answer, or a switch). */
    void (*master)(void *arg, const char *host, int port, unsigned via);
    /* Something to log about sentinel `at` (text valid during the call). */
    void (*note)(void *arg, enum sl__rmaster_note what, unsigned at, const char *text);
    /* subscribed / failed / the sentinel in use changed. May be NULL. */
    void (*changed)(void *arg);
};

struct sl__rmaster;

/* Start following (the first question and the subscription go out
 * from the loop's next iteration, never inside this call); NULL out of memory, or with no
 * sentinels. The conf is copied; its name and link configuration are borrowed. */
struct sl__rmaster *sl__rmaster_new(uv_loop_t *loop, struct sl__rlink_group *g,
                                    const struct sl__rmaster_conf *c,
                                    const struct sl__rmaster_events *ev, void *arg);
/* Stop: no callback after this; the memory goes once its timers closed. */
void sl__rmaster_free(struct sl__rmaster *m);
/* Ask which master, soon (the owner lost it, or it is not a master). */
void sl__rmaster_ask(struct sl__rmaster *m);

/* What a health view shows. */
bool sl__rmaster_subscribed(const struct sl__rmaster *m);
/* A sentinel has failed to answer once (since the start). */
bool sl__rmaster_failed(const struct sl__rmaster *m);
/* "host:port" (IPv6 in brackets) of sentinel i; out is cap bytes. */
void sl__rmaster_addr(const struct sl__rmaster *m, unsigned i, char *out, size_t cap);
/* The sentinel the subscriber is on. */
unsigned sl__rmaster_at(const struct sl__rmaster *m);

/* A +switch-master message for `name`: SL_OK with the new master in out,
 * SL_ENOENT for another master's, SL_EINVAL when it is not one. Pure. */
int sl__sentinel_parse_switch(const char *msg, size_t len, const char *name, struct sl__cnode *out);

#endif /* SL_STORE_RMASTER_H */
