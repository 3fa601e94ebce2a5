/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * bench_table.c - `make bench`, library part: checks per second through
 * sl_table_check for every algorithm (one thread and two threads, a hot set
 * of 1,000 keys and 1,000,000 keys in random order), bytes per tracked key
 * (RSS growth over 1,000,000 16-byte keys), for sliding_log bytes per
 * logged request, and the flood that must never lift a limit (victims
 * allowed again: none; the innocent new clients it restricts). Prints `name value unit` lines, with
 * MET/MISSED and the target beside targeted figures (docs/contracts.md §Interfaces).
 *
 * It does not pin threads (library benchmarks are not pinned, contracts §Interfaces), compare
 * with peers (the server benchmarks, bench/bench_*.sh, do) or assert
 * anything: tests never measure time, this never decides pass/fail.
 *
 * Usage: bench_table [seconds-per-figure]   (default 0.3)
 *        bench_table --ab-shards N [N...]     (shard counts compared, gcra)
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sluice.h"

#define T0        (INT64_C(1700000000) * SL_NS_PER_S)
#define HOT_KEYS  1000u
#define MANY_KEYS 1000000u
#define KEY_LEN   16

static double figure_s = 0.3;
static int repeats = 5; /* rounds per figure (SL_BENCH_REPEAT), best kept */

/* Key k as 16 bytes, "key:" and 12 hex digits, built in place: a server has
 * the key of the request in cache, so the benchmark should not add a cache
 * miss on a key array. */
static inline void key_of(uint32_t k, char out[KEY_LEN])
{
    static const char hex[] = "0123456789abcdef";

    memcpy(out, "key:0000", 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = hex[(k >> (28 - 4 * i)) & 15];
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU time: for single-threaded figures on a busy machine. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parameters that make each algorithm do its usual work: 1000 per second,
 * so keys revisited within the run are sometimes denied. The out-of-line
 * algorithms get small N so that a million keys fit in memory. */
static void limit_for(enum sl_algo a, struct sl_limit *l)
{
    sl_limit_init(l);
    l->algo = a;
    l->requests = 1000;
    l->period_ns = SL_NS_PER_S;
    if (a == SL_ALGO_SLIDING_LOG || a == SL_ALGO_CONCURRENCY)
        l->requests = 16;
    if (a == SL_ALGO_CONCURRENCY)
        l->lease_ns = 100 * SL_NS_PER_MS;
    if (sl_limit_validate(l, NULL) != SL_OK) {
        fprintf(stderr, "bench: invalid limit for %s\n", sl_algo_name(a));
        exit(1);
    }
    sl_limit_finish(l);
}

static sl_table *new_table(size_t max_bytes)
{
    struct sl_table_config c;
    sl_table *t;

    sl_table_config_init(&c);
    c.max_bytes = max_bytes;
    /* SL_BENCH_SHARDS=N overrides the default shard count. */
    if (getenv("SL_BENCH_SHARDS") != NULL)
        c.shards = (unsigned)strtoul(getenv("SL_BENCH_SHARDS"), NULL, 10);
    for (int i = 0; i < 16; i++)
        c.secret[i] = (uint8_t)(i * 37 + 11);
    if (sl_table_new(&c, &t) != SL_OK) {
        fprintf(stderr, "bench: cannot create a table of %zu bytes\n", max_bytes);
        exit(1);
    }
    return t;
}

static size_t cap_for(const struct sl_limit *l)
{
    size_t state = sl_algo_state_size(l);
    size_t per_key = state > 24 ? 64 + 160 + state : 96;
    return per_key * MANY_KEYS * 2;
}

/* ------------------------------------------------------------ workers */

struct run {
    sl_table *t;
    const struct sl_limit *l;
    uint32_t first, n; /* this thread's keys: [first, first + n) */
    bool batch;        /* through sl_table_check_batch, BATCH keys a call */
    uint64_t checks;   /* out */
    double secs;       /* out */
};

static inline uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define BATCH 16

/* One round of 16384 checks through sl_table_check_batch, BATCH at a time;
 * returns the time reached. */
static int64_t batch_round(struct run *r, uint64_t *rng, int64_t now)
{
    struct sl_table_item it[BATCH];
    char keys[BATCH][KEY_LEN];

    for (int i = 0; i < 16384; i += BATCH) {
        for (int j = 0; j < BATCH; j++) {
            key_of(r->first + (uint32_t)(xorshift(rng) % r->n), keys[j]);
            now += 1000;
            it[j] = (struct sl_table_item){keys[j], KEY_LEN, r->l, now, 1, {0}, 0};
        }
        sl_table_check_batch(r->t, it, BATCH);
    }
    return now;
}

/* Check keys in random order for about figure_s seconds. */
static void *worker(void *arg)
{
    struct run *r = arg;
    struct sl_decision d;
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ r->first, done = 0;
    int64_t now = T0;
    double start = now_s(), end = start;

    while (end - start < figure_s) {
        if (r->batch) {
            now = batch_round(r, &rng, now);
            done += 16384;
            end = now_s();
            continue;
        }
        for (int i = 0; i < 16384; i++) {
            char key[KEY_LEN];
            key_of(r->first + (uint32_t)(xorshift(&rng) % r->n), key);
            now += 1000;
            sl_table_check(r->t, key, KEY_LEN, r->l, now, 1, &d);
        }
        done += 16384;
        end = now_s();
    }
    r->checks = done;
    r->secs = end - start;
    return NULL;
}

/* Insert every key of the set once, untimed, so the timed run measures
 * lookups of tracked keys (as in steady state). */
static void warm(sl_table *t, const struct sl_limit *l, uint32_t n)
{
    struct sl_decision d;

    char key[KEY_LEN];

    for (uint32_t k = 0; k < n; k++) {
        key_of(k, key);
        sl_table_check(t, key, KEY_LEN, l, T0, 1, &d);
    }
}

/* Checks per second on `threads` threads over `n` keys (split between the
 * threads, disjoint). */
/* One timed round on an existing table: checks per second of `threads`
 * threads over keys [0, n), split between them. */
static double round_rate(sl_table *t, const struct sl_limit *l, uint32_t n, int threads, bool batch)
{
    pthread_t th[2];
    struct run r[2];
    double total = 0;

    for (int i = 0; i < threads; i++) {
        r[i] = (struct run){t, l, (uint32_t)i * (n / threads), n / threads, batch, 0, 0};
        pthread_create(&th[i], NULL, worker, &r[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += (double)r[i].checks / r[i].secs;
    }
    return total;
}

/* Checks per second on `threads` threads over `n` keys (split between the
 * threads, disjoint), on a fresh table. */
static double rate(const struct sl_limit *l, uint32_t n, int threads, bool batch)
{
    sl_table *t = new_table(cap_for(l));
    double best = 0;

    warm(t, l, n);
    /* The best of `repeats` rounds: other work on the machine only ever
     * slows a round down, so the fastest is the least disturbed. */
    for (int round = 0; round < repeats; round++) {
        double r = round_rate(t, l, n, threads, batch);
        best = r > best ? r : best;
    }
    sl_table_free(t);
    return best;
}

/* ------------------------------------------------------------- memory */

static long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* RSS growth per key after `logged` requests on each of `n` keys, measured
 * here and printed: run in a fresh process (see bytes_per_key), because a
 * forked child would reuse its parent's freed, already resident heap. */
static void measure_bytes_per_key(const struct sl_limit *l, uint32_t n, uint32_t logged)
{
    struct sl_decision d;
    long before = rss_bytes();
    sl_table *t = new_table(cap_for(l));
    char key[KEY_LEN];

    for (uint32_t k = 0; k < n; k++) {
        key_of(k, key);
        for (uint32_t j = 0; j < logged; j++)
            sl_table_check(t, key, KEY_LEN, l, T0 + j, 1, &d);
    }
    printf("%.3f\n", (double)(rss_bytes() - before) / n);
    sl_table_free(t);
}

/* Run `bench_table --rss ALGO N LOGGED [REQUESTS]` in a new process (a clean
 * heap) and read its figure; -1 if that fails. */
static double bytes_per_key(const struct sl_limit *l, uint32_t n, uint32_t logged)
{
    char cmd[256];
    double v = -1;

    snprintf(cmd, sizeof(cmd), "/proc/%ld/exe --rss %d %u %u %llu", (long)getpid(), (int)l->algo, n,
             logged, (unsigned long long)l->requests);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    if (fscanf(p, "%lf", &v) != 1)
        v = -1;
    pclose(p);
    return v;
}

/* ------------------------------------------------------------- output */

static void print_min(const char *name, double v, const char *unit, double target, bool has)
{
    if (!has)
        printf("%s %.0f %s\n", name, v, unit);
    else
        printf("%s %.0f %s %s target>=%.0f\n", name, v, unit, v >= target ? "MET" : "MISSED",
               target);
}

/* The same figures through sl_table_check_batch (BATCH keys a call): the
 * path a server answering pipelined requests can take. Separate lines:
 * a caller of plain sl_table_check gets the figures above. */
static void bench_algo_batch(const struct sl_limit *l, const char *an, bool targeted)
{
    char name[96];
    double hot1 = rate(l, HOT_KEYS, 1, true), many1 = rate(l, MANY_KEYS, 1, true);
    double many2 = rate(l, MANY_KEYS, 2, true);

    snprintf(name, sizeof(name), "lib.%s.hot_1k.1t.batch%d", an, BATCH);
    print_min(name, hot1, "checks/s", 20e6, targeted);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.1t.batch%d", an, BATCH);
    print_min(name, many1, "checks/s", 4e6, targeted);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.2t.batch%d", an, BATCH);
    print_min(name, many2, "checks/s", 0, false);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.2t_over_1t.batch%d", an, BATCH);
    if (targeted)
        printf("%s %.2f x %s target>=1.70\n", name, many2 / many1,
               many2 / many1 >= 1.7 ? "MET" : "MISSED");
    else
        printf("%s %.2f x\n", name, many2 / many1);
}

static void bench_algo(enum sl_algo a)
{
    struct sl_limit l;
    char name[96];
    const char *an = sl_algo_name(a);
    bool targeted = a == SL_ALGO_GCRA || a == SL_ALGO_TOKEN_BUCKET;

    limit_for(a, &l);
    double bpk = bytes_per_key(&l, MANY_KEYS, 1);
    snprintf(name, sizeof(name), "lib.%s.bytes_per_key", an);
    if (targeted)
        printf("%s %.1f bytes %s target<=64\n", name, bpk, bpk <= 64 ? "MET" : "MISSED");
    else
        printf("%s %.1f bytes\n", name, bpk);

    double hot1 = rate(&l, HOT_KEYS, 1, false), many1 = rate(&l, MANY_KEYS, 1, false);
    double hot2 = rate(&l, 2 * HOT_KEYS, 2, false), many2 = rate(&l, MANY_KEYS, 2, false);
    snprintf(name, sizeof(name), "lib.%s.hot_1k.1t", an);
    print_min(name, hot1, "checks/s", 20e6, targeted);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.1t", an);
    print_min(name, many1, "checks/s", 4e6, targeted);
    snprintf(name, sizeof(name), "lib.%s.hot_1k.2t", an);
    print_min(name, hot2, "checks/s", 0, false);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.2t", an);
    print_min(name, many2, "checks/s", 0, false);
    snprintf(name, sizeof(name), "lib.%s.hot_1k.2t_over_1t", an);
    if (targeted)
        printf("%s %.2f x %s target>=1.70\n", name, hot2 / hot1,
               hot2 / hot1 >= 1.7 ? "MET" : "MISSED");
    else
        printf("%s %.2f x\n", name, hot2 / hot1);
    snprintf(name, sizeof(name), "lib.%s.keys_1m.2t_over_1t", an);
    if (targeted)
        printf("%s %.2f x %s target>=1.70\n", name, many2 / many1,
               many2 / many1 >= 1.7 ? "MET" : "MISSED");
    else
        printf("%s %.2f x\n", name, many2 / many1);
    bench_algo_batch(&l, an, targeted);
    fflush(stdout);
}

/* Context for the per-key figures: the latency of one random memory access
 * over 64 MiB (a dependent pointer chase), which bounds lookups over a
 * million keys (each touches an index slot and an entry). */
static void bench_memory_latency(void)
{
    size_t n = (64u << 20) / sizeof(uint64_t), steps = 2000000;
    uint64_t *a = malloc(n * sizeof(uint64_t)), rng = 88172645463325252ull, p = 0;

    if (a == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        a[i] = i;
    for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through all */
        size_t j = (size_t)(xorshift(&rng) % i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
    double start = now_s();
    for (size_t i = 0; i < steps; i++)
        p = a[p];
    double ns = (now_s() - start) / (double)steps * 1e9;
    printf("lib.machine.random_access_64mib %.0f ns%s\n", ns, p == n ? " " : "");
    free(a);
}

/* A loop that shares nothing, `arg` iterations. */
static void *spin(void *arg)
{
    volatile uint64_t x = 0;

    for (uint64_t i = 0, n = (uint64_t)(uintptr_t)arg; i < n; i++)
        x += i;
    return (void *)(uintptr_t)x;
}

/* Context for the two-thread ratios: what two threads that share nothing
 * get over one at this moment (best of the rounds). On a quiet 2-vCPU
 * machine about 2.0; when someone else's work holds a vCPU it falls towards
 * 1.0, and so does every 2t_over_1t figure measured alongside. */
static void bench_parallelism(void)
{
    void *n = (void *)(uintptr_t)50000000u;
    double best = 0;

    for (int round = 0; round < repeats; round++) {
        pthread_t th[2];
        double start = now_s();
        spin(n);
        double one = now_s() - start;
        start = now_s();
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, spin, n);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        double two = 2 * one / (now_s() - start);
        best = two > best ? two : best;
    }
    printf("lib.machine.parallel_2t_over_1t %.2f x\n", best);
}

/* A flood of never-seen keys against a full table (16 MiB, live keys): each
 * check creates a key and evicts one, so this is the bounded cost of making
 * room (drained search, CLOCK) that an attacker sending unique keys gets. */
static void bench_flood(void)
{
    struct sl_limit l;
    struct sl_decision d;
    struct sl_table_stats st;
    char key[KEY_LEN];
    uint32_t k = 0;
    double best = 0;

    limit_for(SL_ALGO_GCRA, &l);
    l.period_ns = 3600 * SL_NS_PER_S; /* nothing drains during the run */
    sl_limit_finish(&l);
    sl_table *t = new_table(16u << 20);
    for (st.evictions = 0; st.evictions == 0; k += 4096) {
        for (uint32_t i = 0; i < 4096; i++) {
            key_of(k + i, key);
            sl_table_check(t, key, KEY_LEN, &l, T0, 1, &d);
        }
        sl_table_stats(t, &st);
    }
    for (int round = 0; round < repeats; round++) {
        double start = now_s(), end = start;
        uint64_t done = 0;
        for (; end - start < figure_s; done += 4096, end = now_s()) {
            for (uint32_t i = 0; i < 4096; i++) {
                key_of(k++, key);
                sl_table_check(t, key, KEY_LEN, &l, T0, 1, &d);
            }
        }
        double r = (double)done / (end - start);
        best = r > best ? r : best;
    }
    sl_table_stats(t, &st);
    printf("lib.gcra.new_keys_full_table.1t %.0f checks/s\n", best);
    printf("lib.gcra.new_keys_full_table.entries %llu keys\n", (unsigned long long)st.entries);
    sl_table_free(t);
}

/* The flood that used to lift a limit: 20 clients blocked (3 per hour),
 * then 400,000 new keys of another limit (1 per hour, each sent twice: out
 * of quota) into a 4 MiB table, then as many of the victims' own limit.
 * How many victims a flood allowed again (the target: none), the flood's
 * rate, and how many of 2,000 new clients (looked at with a peek) start
 * restricted: of a third limit, and of the flooded one (the price,
 * docs/security.md), with the sizing formula's figure beside it. */
static unsigned flood_victims_allowed(sl_table *t, const struct sl_limit *l)
{
    struct sl_decision d;
    char key[32];
    unsigned n = 0;

    for (unsigned v = 0; v < 20; v++) {
        int len = snprintf(key, sizeof(key), "victim-%u", v);
        sl_table_check(t, key, (size_t)len, l, T0, 1, &d);
        n += d.verdict != SL_DENY;
    }
    return n;
}

static double flood_keys(sl_table *t, const struct sl_limit *l, const char *prefix, unsigned n)
{
    struct sl_decision d;
    char key[32];
    double start = now_s();

    for (unsigned k = 0; k < n; k++) {
        int len = snprintf(key, sizeof(key), "%s-%u", prefix, k);
        sl_table_check(t, key, (size_t)len, l, T0, 1, &d);
        sl_table_check(t, key, (size_t)len, l, T0, 1, &d);
    }
    return 2 * n / (now_s() - start);
}

static unsigned flood_restricted(sl_table *t, const struct sl_limit *l, const char *prefix)
{
    struct sl_decision d, fresh;
    sl_table *empty = new_table(1u << 20);
    char key[32];
    unsigned n = 0;

    sl_table_peek(empty, "never-seen", 10, l, T0, &fresh);
    sl_table_free(empty);
    for (unsigned k = 0; k < 2000; k++) {
        int len = snprintf(key, sizeof(key), "%s-%u", prefix, k);
        sl_table_peek(t, key, (size_t)len, l, T0, &d);
        n += d.remaining != fresh.remaining;
    }
    return n;
}

static void bench_flood_victims(void)
{
    struct sl_limit api, other, third;
    struct sl_table_stats s0, s;
    sl_table *t = new_table(4u << 20);

    sl_limit_init(&api);
    api.algo = SL_ALGO_FIXED_WINDOW;
    api.requests = 3;
    api.period_ns = 3600 * SL_NS_PER_S;
    sl_limit_finish(&api);
    other = api;
    other.requests = 1;
    sl_limit_finish(&other);
    third = api;
    third.requests = 5;
    sl_limit_finish(&third);
    for (unsigned v = 0; v < 20; v++)
        for (int i = 0; i < 4; i++)
            flood_victims_allowed(t, &api);
    double rate = flood_keys(t, &other, "other", 400000);
    unsigned after_other = flood_victims_allowed(t, &api);
    unsigned r_third = flood_restricted(t, &third, "third");
    sl_table_stats(t, &s0);
    flood_keys(t, &api, "own", 400000);
    unsigned after_own = flood_victims_allowed(t, &api);
    unsigned r_own = flood_restricted(t, &api, "fresh");
    sl_table_stats(t, &s);
    double x = (double)(s.summary_folds - s0.summary_folds) / ((double)s.summary_cells / 8);
    printf("lib.flood.victims_allowed_again.other_limit %u of 20 %s target==0\n", after_other,
           after_other == 0 ? "MET" : "MISSED");
    printf("lib.flood.victims_allowed_again.own_limit %u of 20 %s target==0\n", after_own,
           after_own == 0 ? "MET" : "MISSED");
    printf("lib.flood.new_keys_4mib.1t %.0f checks/s\n", rate);
    printf("lib.flood.third_limit_new_clients_restricted %u of 2000 %s target==0\n", r_third,
           r_third == 0 ? "MET" : "MISSED");
    printf("lib.flood.own_limit_new_clients_restricted %u of 2000 (formula %.0f, %.1f debts a "
           "cell)\n",
           r_own, 2000 * (1 - 2 * exp(-2 * x) + exp(-26 * x / 7)), x);
    printf("lib.flood.summary_bytes %llu bytes of 4194304\n",
           (unsigned long long)s.summary_cells * 8);
    sl_table_free(t);
}

/* The limiter's path for the commonest request: one descriptor, one gcra
 * limit, 1,000 hot keys, one thread (all-or-nothing bookkeeping included). */
static void bench_limiter(void)
{
    struct sl_limiter_config c;
    struct sl_limiter *lim;
    struct sl_limit l;
    struct sl_match m;
    struct sl_request req;
    struct sl_result res;
    uint64_t rng = 12345, done = 0;
    double best = 0;

    sl_limiter_config_init(&c);
    if (sl_limiter_new(&c, &lim) != SL_OK)
        return;
    limit_for(SL_ALGO_GCRA, &l);
    memset(&m, 0, sizeof(m));
    m.limits[0] = &l;
    m.n_limits = 1;
    m.key_len = KEY_LEN;
    memset(&req, 0, sizeof(req));
    req.hits = 1;
    req.now_ns = T0;
    for (int round = 0; round < repeats; round++) {
        double start = now_s(), end = start;
        for (done = 0; end - start < figure_s; done += 4096, end = now_s()) {
            for (int i = 0; i < 4096; i++) {
                key_of((uint32_t)(xorshift(&rng) % HOT_KEYS), m.key);
                req.now_ns += 1000;
                sl_limiter_check_matched(lim, &m, 1, &req, &res);
            }
        }
        double r = (double)done / (end - start);
        best = r > best ? r : best;
    }
    printf("lib.limiter.gcra.hot_1k.1t %.0f checks/s\n", best);
    sl_limiter_free(lim);
}

/* sliding_log's log: RSS per logged request, 10,000 keys with 1,000 each. */
static void bench_log_bytes(void)
{
    struct sl_limit l;

    limit_for(SL_ALGO_SLIDING_LOG, &l);
    l.requests = 1000;
    double per_key = bytes_per_key(&l, 10000, 1000);
    printf("lib.sliding_log.bytes_per_logged_request %.2f bytes\n", per_key / 1000);
}

/* Building rules: one domain of `n` sibling descriptors (distinct values,
 * each with a limit), from YAML text to a compiled snapshot, as a reload
 * does. Best of the rounds, in ms of wall-clock time, or of this process's
 * CPU time with `cpu` (one thread: what other work on the machine does to
 * the wall clock does not count). */
static double rules_build_ms(unsigned n, bool cpu)
{
    size_t cap = 128 + (size_t)n * 96, len = 0;
    char *text = malloc(cap);
    double best = 1e300;

    if (text == NULL)
        return -1;
    len += (size_t)snprintf(text, cap, "domain: bench\ndescriptors:\n");
    for (unsigned i = 0; i < n; i++) /* values out of order: no sorted-input luck */
        len += (size_t)snprintf(text + len, cap - len,
                                "  - {key: user, value: u%u, rate_limit: {unit: hour, "
                                "requests_per_unit: 5}}\n",
                                (i * 2654435761u) % 1000003u);
    for (int round = 0; round < repeats; round++) {
        sl_rules_builder *b = sl_rules_builder_new();
        sl_rules *r = NULL;
        double start = cpu ? cpu_s() : now_s();
        sl_rules_builder_add_yaml(b, text, len, "bench.yaml", SL_SRC_FILE);
        int rc = sl_rules_build(b, &r);
        double ms = ((cpu ? cpu_s() : now_s()) - start) * 1e3;
        sl_rules_unref(r);
        sl_rules_builder_free(b);
        if (rc != SL_OK) {
            fprintf(stderr, "bench: the rules did not build: %s\n", sl_strerror(rc));
            best = -1;
            break;
        }
        best = ms < best ? ms : best;
    }
    free(text);
    return best;
}

/* What a reload of many sibling descriptors costs (it was quadratic).
 * 16,000 with a limit each is near the most one text may hold (11 YAML
 * nodes each, SL__YAML_MAX_NODES in all). */
static void bench_rules(void)
{
    printf("lib.rules.build_8k_siblings %.1f ms\n", rules_build_ms(8000, false));
    printf("lib.rules.build_16k_siblings %.1f ms\n", rules_build_ms(16000, false));
    printf("lib.rules.build_8k_siblings.cpu %.1f ms\n", rules_build_ms(8000, true));
    printf("lib.rules.build_16k_siblings.cpu %.1f ms\n", rules_build_ms(16000, true));
}

/* `bench_table --ab-shards N...`: gcra with each shard count, rounds
 * interleaved (config after config, 3 x SL_BENCH_REPEAT rounds of 0.1 s,
 * best kept), so that the machine's moods fall on every configuration
 * alike: the comparison behind the default shard count. */
static int ab_shards_main(int argc, char **argv)
{
    enum { MAX_AB = 4 };
    struct sl_limit l;
    sl_table *hot[MAX_AB], *big[MAX_AB];
    double best[MAX_AB][4] = {{0}};
    int n = argc - 2 < MAX_AB ? argc - 2 : MAX_AB;

    limit_for(SL_ALGO_GCRA, &l);
    figure_s = 0.1;
    for (int c = 0; c < n; c++) {
        setenv("SL_BENCH_SHARDS", argv[2 + c], 1);
        hot[c] = new_table(cap_for(&l));
        big[c] = new_table(cap_for(&l));
        warm(hot[c], &l, 2 * HOT_KEYS);
        warm(big[c], &l, MANY_KEYS);
    }
    for (int round = 0; round < 3 * repeats; round++) {
        for (int c = 0; c < n; c++) {
            double r[4] = {round_rate(hot[c], &l, HOT_KEYS, 1, false),
                           round_rate(hot[c], &l, 2 * HOT_KEYS, 2, false),
                           round_rate(big[c], &l, MANY_KEYS, 1, false),
                           round_rate(big[c], &l, MANY_KEYS, 2, false)};
            for (int k = 0; k < 4; k++)
                best[c][k] = r[k] > best[c][k] ? r[k] : best[c][k];
        }
    }
    for (int c = 0; c < n; c++) {
        const char *sh = argv[2 + c];
        printf("lib.gcra.shards_%s.hot_1k.1t %.0f checks/s\n", sh, best[c][0]);
        printf("lib.gcra.shards_%s.hot_1k.2t %.0f checks/s\n", sh, best[c][1]);
        printf("lib.gcra.shards_%s.hot_1k.2t_over_1t %.2f x\n", sh, best[c][1] / best[c][0]);
        printf("lib.gcra.shards_%s.keys_1m.1t %.0f checks/s\n", sh, best[c][2]);
        printf("lib.gcra.shards_%s.keys_1m.2t %.0f checks/s\n", sh, best[c][3]);
        printf("lib.gcra.shards_%s.keys_1m.2t_over_1t %.2f x\n", sh, best[c][3] / best[c][2]);
        sl_table_free(hot[c]);
        sl_table_free(big[c]);
    }
    return 0;
}

static int parse_count(const char *s, int fallback)
{
    long v = strtol(s, NULL, 10);
    return v > 0 && v < 100 ? (int)v : fallback;
}

/* The child side of bytes_per_key(). */
static int rss_main(char **argv)
{
    struct sl_limit l;

    limit_for((enum sl_algo)strtol(argv[2], NULL, 10), &l);
    l.requests = strtoull(argv[5], NULL, 10);
    if (l.algo == SL_ALGO_SLIDING_LOG)
        l.period_ns = 3600 * SL_NS_PER_S; /* nothing expires while logging */
    sl_limit_finish(&l);
    measure_bytes_per_key(&l, (uint32_t)strtoul(argv[3], NULL, 10),
                          (uint32_t)strtoul(argv[4], NULL, 10));
    return 0;
}

int main(int argc, char **argv)
{
    if (getenv("SL_BENCH_REPEAT") != NULL)
        repeats = parse_count(getenv("SL_BENCH_REPEAT"), repeats);
    if (argc == 6 && strcmp(argv[1], "--rss") == 0)
        return rss_main(argv);
    if (argc >= 3 && strcmp(argv[1], "--ab-shards") == 0)
        return ab_shards_main(argc, argv);
    if (argc > 1) {
        double v = strtod(argv[1], NULL);
        figure_s = v > 0 ? v : figure_s;
    }
    bench_memory_latency();
    bench_parallelism();
    /* SL_BENCH_ALGO=gcra runs one algorithm only (for quick iterations). */
    const char *only = getenv("SL_BENCH_ALGO");
    for (int a = 0; a < SL_ALGO_COUNT; a++)
        if (only == NULL || strcmp(only, sl_algo_name((enum sl_algo)a)) == 0)
            bench_algo((enum sl_algo)a);
    if (only == NULL || strcmp(only, "sliding_log") == 0)
        bench_log_bytes();
    if (only == NULL || strcmp(only, "limiter") == 0)
        bench_limiter();
    if (only == NULL || strcmp(only, "flood") == 0) {
        bench_flood();
        bench_flood_victims();
    }
    if (only == NULL || strcmp(only, "rules") == 0)
        bench_rules();
    return 0;
}
