/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_sim.c - see hybrid_sim.h. The stores are the daemon's own
 * (store/hybrid/), driven as tests/redis/test_hybrid_store.c drives them;
 * redis-server is started with tests/redis/redis_server.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "hybrid.h"
#include "hybrid_sim.h"
#include "redis_server.h"

#define MAX_NODES 64

struct sim {
    uv_loop_t loop;
    uv_timer_t tick;
    struct sl__store *node[MAX_NODES];
    unsigned n;
};

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static void spin_until(struct sim *s, int (*done)(struct sim *, unsigned), unsigned i,
                       uint64_t max_ms)
{
    uv_update_time(&s->loop);
    for (uint64_t end = uv_now(&s->loop) + max_ms; !done(s, i) && uv_now(&s->loop) < end;)
        uv_run(&s->loop, UV_RUN_ONCE);
}

static int connected(struct sim *s, unsigned i)
{
    struct sl__hybrid_stats st;

    sl__store_hybrid_stats(s->node[i], &st);
    return st.connected;
}

static int idle(struct sim *s, unsigned i)
{
    struct sl__hybrid_stats st;

    sl__store_hybrid_stats(s->node[i], &st);
    return st.in_flight == 0;
}

struct answer {
    int done;
    enum sl_verdict v;
};

static void on_answer(void *arg, int err, const struct sl_result *res)
{
    struct answer *a = arg;

    a->done = 1;
    a->v = err == SL_OK && res != NULL ? res->verdict : SL_DENY;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

int hsim_run(const struct hsim_req *reqs, size_t n, uint32_t clients, const struct sl_limit *l,
             unsigned nodes, int64_t sync_ms, uint64_t seed, struct hsim_result *out)
{
    struct rs_server rs;
    struct sl__redis_config rcfg;
    struct sl__hybrid_config hcfg = {0};
    struct sim *s = calloc(1, sizeof(*s));
    int rc = -1;
    int64_t w0 = 0, nw = 0, next_sync = INT64_MIN;
    uint64_t *adm = NULL, *off = NULL, rng = seed | 1;

    memset(out, 0, sizeof(*out));
    if (s == NULL || nodes == 0 || nodes > MAX_NODES || n == 0)
        goto out_free;
    memset(&rs, 0, sizeof(rs));
    if (rs_start(&rs) != 0)
        goto out_free;
    uv_loop_init(&s->loop);
    uv_timer_init(&s->loop, &s->tick);
    uv_timer_start(&s->tick, on_tick, 1, 1); /* UV_RUN_ONCE always returns */
    sl__redis_config_init(&rcfg);
    rcfg.port = rs.port;
    hcfg.sync_interval_ms = sync_ms;
    hcfg.timeout_ms = 2000;
    hcfg.max_keys = clients * 4 + 64;
    hcfg.batch = 256;
    hcfg.max_bytes = 64u << 20;
    hcfg.redis = &rcfg;
    hcfg.manual_sync = true; /* only the trace's clock syncs */
    s->n = nodes;
    for (unsigned i = 0; i < nodes; i++) {
        if (sl__store_hybrid_new(&s->loop, &hcfg, &s->node[i]) != SL_OK)
            goto out_stop;
        spin_until(s, connected, i, 5000);
        if (!connected(s, i)) {
            fprintf(stderr, "hybrid_sim: node %u did not connect to redis-server\n", i);
            goto out_stop;
        }
    }
    w0 = floor_div(reqs[0].t_ns, l->period_ns);
    nw = floor_div(reqs[n - 1].t_ns, l->period_ns) - w0 + 1;
    adm = calloc((size_t)nw * clients, sizeof(*adm));
    off = calloc((size_t)nw * clients, sizeof(*off));
    if (adm == NULL || off == NULL)
        goto out_stop;
    for (size_t k = 0; k < n; k++) {
        const struct hsim_req *r = &reqs[k];
        char key[32];
        struct sl_match m;
        struct sl_entry e;
        struct sl_descriptor d;
        struct sl_request req;
        struct answer a = {0};
        unsigned node;

        while (next_sync == INT64_MIN || r->t_ns >= next_sync) {
            int64_t at = next_sync == INT64_MIN ? r->t_ns : next_sync;
            for (unsigned i = 0; i < nodes; i++) { /* one after the other */
                sl__store_hybrid_sync(s->node[i], at);
                spin_until(s, idle, i, 10000);
            }
            next_sync = at + sync_ms * SL_NS_PER_MS;
        }
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        node = (unsigned)((rng * UINT64_C(2685821657736338717)) >> 33) % nodes;
        memset(&m, 0, sizeof(m));
        m.limits[0] = l;
        m.n_limits = 1;
        m.key_len = (size_t)snprintf(key, sizeof(key), "c%u", r->client);
        memcpy(m.key, key, m.key_len);
        e.key = (struct sl_str){"client", 6};
        e.value = (struct sl_str){key, m.key_len};
        d = (struct sl_descriptor){.entries = &e, .n_entries = 1, .hits = -1};
        req = (struct sl_request){.domain = {"sim", 3},
                                  .descriptors = &d,
                                  .n_descriptors = 1,
                                  .hits = 1,
                                  .now_ns = r->t_ns};
        struct sl__store_req q = {.req = &req, .m = &m, .n = 1};
        if (s->node[node]->ops->check(s->node[node], &q, on_answer, &a) != SL_OK || !a.done)
            goto out_stop;
        size_t cell = (size_t)(floor_div(r->t_ns, l->period_ns) - w0) * clients + r->client;
        off[cell]++;
        out->requests++;
        if (a.v != SL_DENY) {
            adm[cell]++;
            out->admitted++;
        }
    }
    {
        uint64_t *ov = calloc((size_t)nw * clients, sizeof(*ov));
        uint64_t lim = l->requests, sum = 0;
        if (ov == NULL)
            goto out_stop;
        for (size_t c = 0; c < (size_t)nw * clients; c++) {
            if (off[c] <= lim)
                continue;
            uint64_t o = adm[c] > lim ? adm[c] - lim : 0;
            ov[out->windows++] = o;
            out->over += o > 0;
            sum += o;
            if (o > out->max)
                out->max = o;
        }
        if (out->windows > 0) {
            qsort(ov, out->windows, sizeof(*ov), cmp_u64);
            out->p99 = ov[(out->windows * 99 + 99) / 100 - 1];
            out->mean = (double)sum / (double)out->windows;
        }
        free(ov);
    }
    for (unsigned i = 0; i < nodes; i++) {
        struct sl__hybrid_stats st;
        sl__store_hybrid_stats(s->node[i], &st);
        out->sync_calls += st.sync_calls;
        out->sync_failures += st.sync_failures;
    }
    rc = 0;
out_stop:
    for (unsigned i = 0; i < nodes && i < MAX_NODES; i++)
        sl__store_free(s->node[i]);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_run(&s->loop, UV_RUN_NOWAIT);
    uv_loop_close(&s->loop);
    rs_stop(&rs);
out_free:
    free(adm);
    free(off);
    free(s);
    return rc;
}
