/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * accuracy_hybrid.c - see accuracy_hybrid.h. The stores are driven as
 * tests/redis/test_hybrid_store.c drives them; redis-server is started with
 * tests/redis/redis_server.c.
 */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "accuracy_hybrid.h"
#include "hybrid.h"
#include "redis_server.h"

#define MAX_NODES 16

/* One key's current window. */
struct hy_key {
    int64_t w;
    uint64_t offered, admitted;
};

struct hy {
    char label[48];
    struct sl_limit l;
    unsigned nodes;
    int64_t sync_ns, next_sync;
    uint64_t rng;
    struct rs_server rs;
    bool rs_up;
    struct sl__redis_config rcfg;
    struct sl__hybrid_config hcfg;
    uv_loop_t loop;
    uv_timer_t tick;
    bool loop_up;
    struct sl__store *node[MAX_NODES];
    struct hy_key *keys;
    uint32_t n_keys;
    uint64_t *over; /* overshoot of each finished window offered over the limit */
    size_t n_over, cap_over;
    bool failed;
};

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static struct sl__hybrid_stats stats_of(struct hy *h, unsigned i)
{
    struct sl__hybrid_stats st;

    sl__store_hybrid_stats(h->node[i], &st);
    return st;
}

/* Run the loop until node i is connected (want_conn) or has no call out. */
static bool spin(struct hy *h, unsigned i, bool want_conn)
{
    uv_update_time(&h->loop);
    for (uint64_t end = uv_now(&h->loop) + 10000; uv_now(&h->loop) < end;) {
        struct sl__hybrid_stats st = stats_of(h, i);
        if (want_conn ? st.connected : st.in_flight == 0)
            return true;
        uv_run(&h->loop, UV_RUN_ONCE);
    }
    return false;
}

void acc_hybrid_close(void *self)
{
    struct hy *h = self;

    if (h == NULL)
        return;
    for (unsigned i = 0; i < MAX_NODES; i++)
        sl__store_free(h->node[i]);
    if (h->loop_up) {
        uv_close((uv_handle_t *)&h->tick, NULL);
        uv_run(&h->loop, UV_RUN_NOWAIT);
        uv_loop_close(&h->loop);
    }
    if (h->rs_up)
        rs_stop(&h->rs);
    free(h->keys);
    free(h->over);
    free(h);
}

void *acc_hybrid_open(uint64_t requests, int64_t period_ns, const char *arg, char *err,
                      size_t err_len)
{
    struct hy *h = calloc(1, sizeof(*h));
    char *end;
    unsigned long nodes = strtoul(arg, &end, 10), sync_ms = 0, buckets = 1;
    const char *why = NULL;

    if (h == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    if (*end == ':')
        sync_ms = strtoul(end + 1, &end, 10);
    if (*end == ':')
        buckets = strtoul(end + 1, &end, 10);
    if (*end != '\0' || nodes < 1 || nodes > MAX_NODES || sync_ms < 1 || buckets < 1 ||
        buckets > SL_SW_BUCKETS_MAX) {
        snprintf(err, err_len,
                 "hybrid:NODES:SYNC_MS[:BUCKETS] needs 1 to %d nodes, a sync interval in ms "
                 "and 1 to %u buckets, not '%s'",
                 MAX_NODES, SL_SW_BUCKETS_MAX, arg);
        free(h);
        return NULL;
    }
    sl_limit_init(&h->l);
    h->l.algo = SL_ALGO_SLIDING_WINDOW;
    h->l.requests = requests;
    h->l.period_ns = period_ns;
    h->l.buckets = (uint16_t)buckets;
    h->l.count_rejected = true;
    if (sl_limit_validate(&h->l, &why) != SL_OK) {
        snprintf(err, err_len, "%s", why);
        free(h);
        return NULL;
    }
    sl_limit_finish(&h->l);
    h->nodes = (unsigned)nodes;
    h->sync_ns = (int64_t)sync_ms * SL_NS_PER_MS;
    h->next_sync = INT64_MIN;
    h->rng = UINT64_C(0x9e3779b97f4a7c15) ^ nodes ^ (sync_ms << 8) ^ (buckets << 32);
    snprintf(h->label, sizeof(h->label), "hybrid_n%lu_sync%lums_b%lu", nodes, sync_ms, buckets);
    if (rs_start(&h->rs) != 0) {
        snprintf(err, err_len, "could not start redis-server");
        acc_hybrid_close(h);
        return NULL;
    }
    h->rs_up = true;
    uv_loop_init(&h->loop);
    uv_timer_init(&h->loop, &h->tick);
    uv_timer_start(&h->tick, on_tick, 1, 1); /* UV_RUN_ONCE always returns */
    h->loop_up = true;
    sl__redis_config_init(&h->rcfg);
    h->rcfg.port = h->rs.port;
    h->hcfg.sync_interval_ms = (int64_t)sync_ms;
    h->hcfg.timeout_ms = 5000;
    h->hcfg.max_keys = 1u << 20;
    h->hcfg.batch = 1024;
    h->hcfg.max_bytes = (size_t)256 << 20;
    h->hcfg.redis = &h->rcfg;
    h->hcfg.manual_sync = true; /* only the trace's clock syncs */
    for (unsigned i = 0; i < h->nodes; i++) {
        if (sl__store_hybrid_new(&h->loop, &h->hcfg, &h->node[i]) != SL_OK || !spin(h, i, true)) {
            snprintf(err, err_len, "hybrid node %u did not start or connect", i);
            acc_hybrid_close(h);
            return NULL;
        }
    }
    return h;
}

const char *acc_hybrid_label(void *self)
{
    return ((struct hy *)self)->label;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static void finish_window(struct hy *h, struct hy_key *k)
{
    if (k->offered <= h->l.requests)
        return;
    if (h->n_over == h->cap_over) {
        h->cap_over = h->cap_over ? h->cap_over * 2 : 4096;
        h->over = realloc(h->over, h->cap_over * sizeof(*h->over));
        if (h->over == NULL)
            abort();
    }
    h->over[h->n_over++] = k->admitted > h->l.requests ? k->admitted - h->l.requests : 0;
}

struct answer {
    bool done;
    enum sl_verdict v;
};

static void on_answer(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct answer *a = arg;

    (void)by;
    a->done = true;
    a->v = err == SL_OK && res != NULL ? res->verdict : SL_DENY;
}

bool acc_hybrid_decide(void *self, uint32_t key, const char *kb, size_t klen, int64_t now_ns,
                       uint64_t cost)
{
    struct hy *h = self;
    struct sl_match m;
    struct sl_descriptor d;
    struct sl_request req;
    struct answer a = {0};
    struct hy_key *k;
    unsigned node;
    int64_t w;

    for (int rounds = 0; h->next_sync == INT64_MIN || now_ns >= h->next_sync; rounds++) {
        int64_t at = h->next_sync == INT64_MIN ? now_ns : h->next_sync;
        for (unsigned i = 0; i < h->nodes; i++) { /* one after the other */
            sl__store_hybrid_sync(h->node[i], at);
            h->failed |= !spin(h, i, false);
        }
        /* a gap in the trace: after two rounds every node has seen every
         * other's last push, and more rounds change nothing: skip to now */
        h->next_sync = at + h->sync_ns;
        if (rounds >= 1 && now_ns - h->next_sync > h->sync_ns)
            h->next_sync = now_ns;
    }
    h->rng ^= h->rng >> 12;
    h->rng ^= h->rng << 25;
    h->rng ^= h->rng >> 27;
    node = (unsigned)(((h->rng * UINT64_C(2685821657736338717)) >> 33) % h->nodes);
    memset(&m, 0, sizeof(m));
    m.limits[0] = &h->l;
    m.n_limits = 1;
    m.key_len = klen < sizeof(m.key) ? klen : sizeof(m.key);
    memcpy(m.key, kb, m.key_len);
    d = (struct sl_descriptor){.entries = NULL, .n_entries = 0, .hits = -1};
    req = (struct sl_request){.domain = {"bench", 5},
                              .descriptors = &d,
                              .n_descriptors = 1,
                              .hits = cost,
                              .now_ns = now_ns};
    struct sl__store_req q = {.req = &req, .m = &m, .n = 1};
    if (h->node[node]->ops->check(h->node[node], &q, on_answer, &a) != SL_OK || !a.done)
        h->failed = true;
    /* the fleet's admissions per key and aligned window */
    while (key >= h->n_keys) {
        uint32_t n = h->n_keys ? h->n_keys * 2 : 4096;
        h->keys = realloc(h->keys, n * sizeof(*h->keys));
        if (h->keys == NULL)
            abort();
        for (uint32_t i = h->n_keys; i < n; i++)
            h->keys[i] = (struct hy_key){.w = INT64_MIN};
        h->n_keys = n;
    }
    k = &h->keys[key];
    w = floor_div(now_ns, h->l.period_ns);
    if (k->w != w) {
        if (k->w != INT64_MIN)
            finish_window(h, k);
        *k = (struct hy_key){.w = w};
    }
    k->offered += cost;
    if (a.v != SL_DENY)
        k->admitted += cost;
    return a.v != SL_DENY;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void acc_hybrid_report(void *self, FILE *out)
{
    struct hy *h = self;
    uint64_t sum = 0, over = 0, max = 0, p99 = 0, calls = 0, lost = 0;

    for (uint32_t i = 0; i < h->n_keys; i++)
        if (h->keys[i].w != INT64_MIN) {
            finish_window(h, &h->keys[i]);
            h->keys[i].w = INT64_MIN;
        }
    for (size_t i = 0; i < h->n_over; i++) {
        sum += h->over[i];
        over += h->over[i] > 0;
        if (h->over[i] > max)
            max = h->over[i];
    }
    if (h->n_over > 0) {
        qsort(h->over, h->n_over, sizeof(*h->over), cmp_u64);
        p99 = h->over[(h->n_over * 99 + 99) / 100 - 1];
    }
    for (unsigned i = 0; i < h->nodes; i++) {
        struct sl__hybrid_stats st = stats_of(h, i);
        calls += st.sync_calls;
        lost += st.sync_failures;
    }
    fprintf(out, "accuracy_%s_overshoot_max %llu requests over the limit in one window\n", h->label,
            (unsigned long long)max);
    fprintf(out,
            "accuracy_%s_overshoot_p99 %llu requests (of %zu key-windows offered more "
            "than the limit; mean %.3f)\n",
            h->label, (unsigned long long)p99, h->n_over,
            h->n_over ? (double)sum / (double)h->n_over : 0.0);
    fprintf(out, "accuracy_%s_windows_over_limit %.2f %% (%llu)\n", h->label,
            h->n_over ? 100.0 * (double)over / (double)h->n_over : 0.0, (unsigned long long)over);
    fprintf(out, "accuracy_%s_sync_calls %llu calls (%llu lost)%s\n", h->label,
            (unsigned long long)calls, (unsigned long long)lost,
            h->failed ? " - A NODE FAILED: figures not valid" : "");
}
