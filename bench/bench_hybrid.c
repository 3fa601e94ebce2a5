/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * bench_hybrid.c - how far a fleet of hybrid nodes overshoots a limit, on
 * a generated trace replayed on the trace's clock (bench/hybrid_sim.c).
 *
 *   bench_hybrid [--clients 200] [--seconds 120] [--seed 18] [--nodes 3]
 *                [--sync-ms 10,50] [--limit 100] [--period-s 10]
 *
 * The trace (fixed by its parameters and seed): `clients` clients, each
 * with a base rate drawn log-uniformly from 10^-1.5 (0.03x) to 10^0.5 (3.2x) the limit's rate
 * (limit / period), alternating ON and OFF spells of exponential lengths
 * (mean 5 s each) at 2x and 0.1x the base rate, Poisson arrivals within a
 * spell. Every request goes to one of `nodes` nodes at random (seeded).
 * For fixed_window and sliding_window of `limit` per `period-s`, and each
 * sync interval, it prints the overshoot per (client, window) over the
 * windows in which the client offered more than the limit: max, p99, mean
 * and the share over the limit; and the share of requests offered over
 * the limit (a client's requests past the limit in its window). Lines
 * starting with '#' say it in words; the others are `name value unit`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybrid_sim.h"

/* Base rates: log-uniform from 10^LOG_LO to 10^LOG_HI times the limit's rate. */
#ifndef LOG_LO
#define LOG_LO (-1.5)
#define LOG_HI 0.5
#endif

static uint64_t rs = 18;

static double uniform(void)
{
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return (double)((rs * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

static double expo(double mean)
{
    double u = uniform();
    return -mean * log(u > 0 ? u : 1e-300);
}

static int cmp_req(const void *a, const void *b)
{
    const struct hsim_req *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->client < y->client ? -1 : x->client > y->client;
}

int main(int argc, char **argv)
{
    unsigned clients = 200, nodes = 3, limit = 100;
    double seconds = 120, period_s = 10;
    uint64_t seed = 18;
    char syncs[64] = "10,50";
    struct hsim_req *reqs = NULL;
    size_t n = 0, cap = 0;
    const int64_t t0 = INT64_C(1700000000000000000);

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--clients"))
            clients = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--nodes"))
            nodes = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--limit"))
            limit = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--period-s"))
            period_s = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--sync-ms"))
            snprintf(syncs, sizeof(syncs), "%s", argv[i + 1]);
        else {
            fprintf(stderr, "bench_hybrid: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    rs = seed | 1;
    double lim_rate = limit / period_s;
    for (unsigned c = 0; c < clients; c++) {
        double base = lim_rate * pow(10.0, LOG_LO + (LOG_HI - LOG_LO) * uniform());
        double t = 0;
        int on = uniform() < 0.5;
        while (t < seconds) {
            double end = t + expo(5.0), rate = base * (on ? 2.0 : 0.1);
            for (t += expo(1.0 / rate); t < end && t < seconds; t += expo(1.0 / rate)) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 65536;
                    reqs = realloc(reqs, cap * sizeof(*reqs));
                    if (reqs == NULL)
                        return 1;
                }
                reqs[n].t_ns = t0 + (int64_t)(t * 1e9);
                reqs[n].client = c;
                n++;
            }
            t = end;
            on = !on;
        }
    }
    qsort(reqs, n, sizeof(*reqs), cmp_req);
    /* requests over the limit: past the limit in their client's window */
    {
        int64_t period = (int64_t)(period_s * 1e9);
        uint64_t over = 0;
        uint32_t *cnt = calloc(clients, sizeof(*cnt));
        int64_t *win = calloc(clients, sizeof(*win));
        for (size_t k = 0; k < n; k++) {
            int64_t w = reqs[k].t_ns / period;
            if (win[reqs[k].client] != w) {
                win[reqs[k].client] = w;
                cnt[reqs[k].client] = 0;
            }
            over += ++cnt[reqs[k].client] > limit;
        }
        printf("# trace: %u clients, %.0f s, seed %llu, %zu requests, %.1f %% over a fixed window "
               "of %u per %.0f s\n",
               clients, seconds, (unsigned long long)seed, n, 100.0 * (double)over / (double)n,
               limit, period_s);
        free(cnt);
        free(win);
    }
    for (int a = 0; a < 2; a++) {
        struct sl_limit l;
        sl_limit_init(&l);
        l.algo = a == 0 ? SL_ALGO_FIXED_WINDOW : SL_ALGO_SLIDING_WINDOW;
        l.requests = limit;
        l.period_ns = (int64_t)(period_s * 1e9);
        if (sl_limit_validate(&l, NULL) != SL_OK)
            return 1;
        sl_limit_finish(&l);
        for (char *p = syncs; *p != '\0';) {
            long ms = strtol(p, &p, 10);
            struct hsim_result r;
            if (hsim_run(reqs, n, clients, &l, nodes, ms, seed, &r) != 0)
                return 1;
            printf("# hybrid %s nodes=%u sync=%ldms: %llu windows over the limit offered, %llu "
                   "(%.2f %%) admitted over it; overshoot max %llu p99 %llu mean %.3f; "
                   "admitted %llu of %llu; %llu sync calls, %llu lost\n",
                   sl_algo_name(l.algo), nodes, ms, (unsigned long long)r.windows,
                   (unsigned long long)r.over,
                   r.windows ? 100.0 * (double)r.over / (double)r.windows : 0.0,
                   (unsigned long long)r.max, (unsigned long long)r.p99, r.mean,
                   (unsigned long long)r.admitted, (unsigned long long)r.requests,
                   (unsigned long long)r.sync_calls, (unsigned long long)r.sync_failures);
            printf("hybrid_%s_n%u_sync%ldms_overshoot_max %llu requests\n"
                   "hybrid_%s_n%u_sync%ldms_overshoot_p99 %llu requests\n"
                   "hybrid_%s_n%u_sync%ldms_windows_over_limit %.2f %%\n",
                   sl_algo_name(l.algo), nodes, ms, (unsigned long long)r.max, sl_algo_name(l.algo),
                   nodes, ms, (unsigned long long)r.p99, sl_algo_name(l.algo), nodes, ms,
                   r.windows ? 100.0 * (double)r.over / (double)r.windows : 0.0);
            fflush(stdout);
            if (*p == ',')
                p++;
        }
    }
    free(reqs);
    return 0;
}
