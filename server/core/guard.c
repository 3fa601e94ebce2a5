/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * guard.c - the budget of failed admin credentials (guard.h), kept in the
 * library's own state table: one GCRA limit of admin.max_failures a
 * minute (burst the same), keyed by the peer's client key (an IPv4
 * address or an IPv6 network: client_key.h), on real
 * monotonic time (not the test clock: a frozen clock would never give a
 * locked address its tries back). The table's memory is capped and its
 * hash keyed with a secret the server draws, so addresses cannot be made
 * to collide, and an old entry is evicted before a new address is
 * refused.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "guard.h"
#include "log.h"
#include "server-t.h"
#include "sluice.h"
#include "worker-t.h"
#include "xalloc.h"

#define GUARD_BYTES (1u << 20)

struct sl__guard {
    sl_table *t;
    struct sl_limit l;
};

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct sl__guard *sl__guard_new(unsigned per_minute, const uint8_t secret[16])
{
    struct sl_table_config tc;
    struct sl__guard *g = sl__xzalloc(sizeof(*g));

    sl_table_config_init(&tc);
    tc.max_bytes = GUARD_BYTES;
    memcpy(tc.secret, secret, sizeof(tc.secret));
    sl_limit_init(&g->l);
    g->l.algo = SL_ALGO_GCRA;
    g->l.requests = per_minute;
    g->l.period_ns = INT64_C(60) * 1000000000;
    g->l.burst = (int64_t)per_minute - 1; /* GCRA admits burst + 1 at once */
    sl_limit_finish(&g->l);
    if (sl_table_new(&tc, &g->t) != SL_OK) {
        free(g);
        return NULL;
    }
    return g;
}

void sl__guard_free(struct sl__guard *g)
{
    if (g == NULL)
        return;
    sl_table_free(g->t);
    free(g);
}

int64_t sl__guard_wait_s(struct sl__conn *c)
{
    struct sl__guard *g = c->w->srv->guard;
    unsigned char key[16];
    size_t n;
    struct sl_decision d;
    int64_t wait;

    if (g == NULL || (n = sl__conn_peer_addr(c, key)) == 0)
        return 0;
    /* a peek (cost 0) is never denied: the address is out of tries when
     * none remains, until the backlog (reset) has drained below what the
     * burst allows, one emission interval T from full */
    if (sl_table_peek(g->t, key, n, &g->l, mono_ns(), &d) != SL_OK || d.remaining > 0)
        return 0;
    wait = d.reset_ns - g->l.burst * (g->l.period_ns / (int64_t)g->l.requests);
    return wait > 0 ? (wait + 999999999) / 1000000000 : 1;
}

void sl__guard_failed(struct sl__conn *c)
{
    static struct sl__lograte rl;
    struct sl__guard *g = c->w->srv->guard;
    unsigned char key[16];
    char addr[INET6_ADDRSTRLEN + 4] = "?"; /* and "/prefix" */
    size_t n;
    struct sl_decision d;

    if (g == NULL || (n = sl__conn_peer_addr(c, key)) == 0)
        return;
    if (sl_table_check(g->t, key, n, &g->l, mono_ns(), 1, &d) != SL_OK || d.remaining > 0)
        return;
    inet_ntop(n == 4 ? AF_INET : AF_INET6, key, addr, sizeof(addr) - 4);
    if (n == 16 && c->w->srv->cfg.ipv6_client_prefix < 128) /* a network: say which */
        snprintf(addr + strlen(addr), 5, "/%u", c->w->srv->cfg.ipv6_client_prefix);
    sl__log_rate(&rl, SL__LOG_WARN, "admin.locked", &SL__LOG_STR("address", addr), 1,
                 "admin: %s presented admin.max_failures wrong credentials; its admin requests "
                 "are refused until a try comes back",
                 addr);
}
