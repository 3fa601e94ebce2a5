/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid.c - the hybrid store's operations (see hybrid.h) and its table of
 * kept deltas.
 *
 * A check is decided by this node's own limiter, exactly as the memory
 * store decides, and calls back before it returns. The limiter tells the
 * store every limit state a decision recorded (sl__limiter_on_commit), and
 * the store adds the cost to that key's entry here: fixed and sliding
 * windows per window index (a count), the buckets per key (the consumed
 * amount). Nothing else happens on the request path: no I/O, no
 * allocation (the entries and their index are allocated with the store),
 * no lock but the limiter's. When the request's time shows a sync is due,
 * a zero-delay timer runs it after the check returns (hybrid_sync.c).
 *
 * After a sync the fleet's total of every pushed key is known; what the
 * other nodes recorded since our previous push (total - what we saw then
 * - what we pushed) is added to the local state (sl__limiter_absorb), so
 * the local table reflects the whole fleet, one sync late.
 *
 * A reset forgets the key on every worker of this node and, through Redis,
 * on every node: its counters are deleted and its reset marker set
 * (hybrid_sync.c); a node that counted the key before the marker's time
 * forgets its own state of it at its next sync (sl__hy_apply).
 *
 * A request with a limit whose state is not an amount (sliding_log,
 * concurrency, and the warm-up token bucket, whose state is not a plain
 * level) goes to the Redis store as a whole (exact, one round trip).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hybrid_int.h"
#include "kind.h"

static const struct sl__store_ops hybrid_ops;

static struct sl__hystore *of(const struct sl__store *s)
{
    return (struct sl__hystore *)(void *)s;
}

/* The Redis key names are the same on every node: a fixed SipHash key. */
static const uint8_t key_hash_key[16] = {'s', 'l', 'u', 'i', 'c', 'e', '-', 'h',
                                         'y', 'b', 'r', 'i', 'd', '-', 'v', '1'};

/* Decided in the local table and pushed to the fleet. */
static bool syncable(const struct sl_limit *l)
{
    switch (l->algo) {
    case SL_ALGO_SLIDING_LOG:
    case SL_ALGO_CONCURRENCY:
    case SL_ALGO_ADAPTIVE_CONCURRENCY: /* per node: nothing pushed */
        return false;
    case SL_ALGO_TOKEN_BUCKET:
        return l->warmup_ns == 0;
    default:
        return true;
    }
}

/* Decided by the inner Redis store: what is neither synced nor per node. */
static bool in_redis(const struct sl_limit *l)
{
    return !syncable(l) && l->algo != SL_ALGO_ADAPTIVE_CONCURRENCY;
}

static bool windowed(const struct sl_limit *l)
{
    return l->algo == SL_ALGO_FIXED_WINDOW || l->algo == SL_ALGO_SLIDING_WINDOW;
}

/* The sub-windows of a sliding window (1: the classic two windows). */
static int64_t sub_windows(const struct sl_limit *l)
{
    return l->buckets > 1 ? l->buckets : 1;
}

/* What a window entry counts: one window (fixed), one sub-window
 * (sliding), the windows of the algorithms. */
static int64_t span_ns(const struct sl_limit *l)
{
    return l->algo == SL_ALGO_SLIDING_WINDOW ? l->period_ns / sub_windows(l) : l->period_ns;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

/* ------------------------------------------------------------ kept deltas */

static uint32_t home(const struct sl__hystore *st, const uint64_t h[2], int64_t w)
{
    uint64_t x = h[0] ^ ((uint64_t)w * UINT64_C(0x9e3779b97f4a7c15));
    return (uint32_t)(x ^ (x >> 32)) & (st->index_cap - 1);
}

/* Index slot of (h, w), or of the empty slot where it would go. */
static uint32_t slot_of(const struct sl__hystore *st, const uint64_t h[2], int64_t w, bool *found)
{
    uint32_t i = home(st, h, w);

    for (;; i = (i + 1) & (st->index_cap - 1)) {
        uint32_t e = st->index[i];
        if (e == 0) {
            *found = false;
            return i;
        }
        const struct sl__hy_ent *x = &st->ents[e - 1];
        if (x->h[0] == h[0] && x->h[1] == h[1] && x->w == w) {
            *found = true;
            return i;
        }
    }
}

static struct sl__hy_ent *find(struct sl__hystore *st, const uint64_t h[2], int64_t w)
{
    bool found;
    uint32_t i = slot_of(st, h, w, &found);

    return found ? &st->ents[st->index[i] - 1] : NULL;
}

/* Remove entry e (backward-shift deletion: no tombstones). */
static void remove_ent(struct sl__hystore *st, struct sl__hy_ent *e)
{
    bool found;
    uint32_t i = slot_of(st, e->h, e->w, &found), j = i, mask = st->index_cap - 1;

    if (!found)
        return;
    st->free_ents[st->n_free++] = st->index[i] - 1;
    e->used = false;
    uint32_t last = st->live[--st->n_live];
    st->live[e->pos] = last;
    st->ents[last].pos = e->pos;
    for (;;) {
        j = (j + 1) & mask;
        if (st->index[j] == 0)
            break;
        const struct sl__hy_ent *x = &st->ents[st->index[j] - 1];
        uint32_t k = home(st, x->h, x->w);
        /* move x back to i if its home is not cyclically in (i, j] */
        if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        st->index[i] = st->index[j];
        i = j;
    }
    st->index[i] = 0;
}

/* The hash that names limit l's counters of match key `key` in Redis, the
 * same on every node (key_len <= SL__HY_KEY_MAX). */
static void key_hash(const char *key, size_t key_len, const struct sl_limit *l, uint64_t h[2])
{
    char buf[SL__HY_KEY_MAX + 8];

    memcpy(buf, key, key_len);
    for (int k = 0; k < 8; k++)
        buf[key_len + (size_t)k] = (char)(l->id >> (8 * k));
    sl_siphash13_128(key_hash_key, buf, key_len + 8, h);
}

/* The limiter recorded `cost` on limit l of match m: keep it for the next
 * sync. Called under the limiter's lock; allocates nothing. */
static void on_commit(void *arg, const struct sl_match *m, const struct sl_limit *l, uint64_t cost,
                      int64_t now_ns)
{
    struct sl__hystore *st = arg;
    uint64_t h[2];
    int64_t w = windowed(l) ? floor_div(now_ns, span_ns(l)) : 0;
    struct sl__hy_ent *e;

    if (!syncable(l) || m->key_len > SL__HY_KEY_MAX) {
        SL__HY_CNT(st, untracked, cost);
        return;
    }
    key_hash(m->key, m->key_len, l, h);
    e = find(st, h, w);
    if (e == NULL) {
        bool found;
        uint32_t i;
        if (st->n_free == 0) {
            SL__HY_CNT(st, untracked, cost);
            return;
        }
        uint32_t n = st->free_ents[--st->n_free];
        e = &st->ents[n];
        memset(e, 0, offsetof(struct sl__hy_ent, key));
        e->h[0] = h[0];
        e->h[1] = h[1];
        e->w = w;
        e->l = *l;
        e->l.name = NULL;
        e->used = true;
        e->first_ns = now_ns;
        e->key_len = (uint16_t)m->key_len;
        memcpy(e->key, m->key, m->key_len);
        i = slot_of(st, h, w, &found);
        st->index[i] = n + 1;
        e->pos = st->n_live;
        st->live[st->n_live++] = n;
        if (windowed(l)) {
            struct sl__hy_ent *prev = find(st, h, w - 1);
            if (prev != NULL)
                prev->superseded = true;
        }
    }
    e->pending += cost;
    SL__HY_CNT(st, kept, cost);
    if (now_ns > e->last_ns)
        e->last_ns = now_ns;
}

/* How long a bucket's entry stays useful after its last activity: the
 * time the bucket takes to drain from full, twice. */
static int64_t drain_ns(const struct sl_limit *l)
{
    uint64_t cap =
        l->burst > 0 && (uint64_t)l->burst > l->requests ? (uint64_t)l->burst : l->requests;
    __int128 t = (__int128)l->period_ns * (__int128)(cap / (l->requests ? l->requests : 1) + 1);

    t *= 2;
    return t > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)t;
}

int64_t sl__hy_limit_ttl_ms(const struct sl__hystore *st, const struct sl_limit *l)
{
    int64_t ns = windowed(l) ? 2 * l->period_ns : drain_ns(l);
    int64_t ms = ns / SL_NS_PER_MS + st->cfg.redis->opts.slack_ms + 1;

    return ms < 1000 ? 1000 : ms;
}

/* A reset deletes every window a node may still count at now_ns, give or
 * take a window of clock difference between nodes: the current one, the
 * sub-windows a sliding window still weighs (at most 4096 of them), the
 * one before and the one after. */
void sl__hy_reset_windows(const struct sl_limit *l, int64_t now_ns, int64_t *first, int64_t *last)
{
    int64_t cur, back;

    *first = *last = 0;
    if (!windowed(l))
        return;
    cur = floor_div(now_ns, span_ns(l));
    back = l->algo == SL_ALGO_SLIDING_WINDOW ? sub_windows(l) : 0;
    if (back > 4096)
        back = 4096;
    *first = cur - back - 1;
    *last = cur + 1;
}

/* Is entry e still of use at now? Windows: while its window is the
 * current one (fixed) or one the sliding window still counts (the current
 * sub-window and the N before it); buckets: until the bucket has drained
 * twice over since its last activity. */
static bool useful(const struct sl__hy_ent *e, int64_t now_ns)
{
    if (windowed(&e->l)) {
        int64_t cur = floor_div(now_ns, span_ns(&e->l));
        return e->w >= cur - (e->l.algo == SL_ALGO_SLIDING_WINDOW ? sub_windows(&e->l) : 0);
    }
    return now_ns - e->last_ns < drain_ns(&e->l);
}

void sl__hy_sweep(struct sl__hystore *st, int64_t now_ns)
{
    uint64_t keys = 0, kept = 0;

    /* backwards: a removal moves the last entry into the slot, already seen */
    for (uint32_t k = st->n_live; k-- > 0;) {
        struct sl__hy_ent *e = &st->ents[st->live[k]];
        if (e->inflight == 0 && !useful(e, now_ns)) {
            if (e->pending > 0)
                SL__HY_CNT(st, deltas_dropped, e->pending);
            remove_ent(st, e);
            continue;
        }
        keys++;
        kept += e->pending;
    }
    SL__HY_SET(st, keys, keys);
    SL__HY_SET(st, kept, kept);
}

size_t sl__hy_key_name(const struct sl__hystore *st, const struct sl__hy_key *k, char *buf,
                       size_t cap)
{
    const uint64_t *h = k->h;
    int n;

    if (k->marker)
        n = snprintf(buf, cap, "%s:h1:{%016llx%016llx}:r", st->cfg.redis->opts.prefix,
                     (unsigned long long)h[0], (unsigned long long)h[1]);
    else if (windowed(k->l))
        n = snprintf(buf, cap, "%s:h1:{%016llx%016llx}:%lld", st->cfg.redis->opts.prefix,
                     (unsigned long long)h[0], (unsigned long long)h[1], (long long)k->w);
    else
        n = snprintf(buf, cap, "%s:h1:{%016llx%016llx}", st->cfg.redis->opts.prefix,
                     (unsigned long long)h[0], (unsigned long long)h[1]);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

void sl__hy_restore(struct sl__hystore *st, struct sl__hy_ent *e)
{
    e->in_call = false;
    if (e->skip_absorb) { /* deltas from before a reset here: not pushed again */
        e->skip_absorb = false;
        e->inflight = 0;
        return;
    }
    SL__HY_CNT(st, kept, e->inflight);
    e->pending += e->inflight;
    e->inflight = 0;
}

/* Forget this worker's local state of entry e's key and limit. */
static void forget_local(struct sl__hystore *st, const struct sl__hy_ent *e)
{
    struct sl_match m = {.limits = {&e->l}, .n_limits = 1, .key_len = e->key_len};

    memcpy(m.key, e->key, e->key_len);
    (void)sl_limiter_reset(st->lim, &m, 1); /* SL_ENOENT: nothing left to forget */
}

void sl__hy_apply(struct sl__hystore *st, struct sl__hy_ent *e, uint64_t total, int64_t reset_ms)
{
    uint64_t d = e->inflight, others;
    int64_t at = st->last_now_ns;

    e->in_call = false;
    if (e->skip_absorb) {
        /* reset on this node while this call was out: the total is from
         * before the reset (whose counters are gone now), nothing to add */
        e->skip_absorb = false;
        e->seen = total;
        e->inflight = 0;
        return;
    }
    if (reset_ms > e->reset_ms) {
        e->reset_ms = reset_ms;
        if (floor_div(e->first_ns, SL_NS_PER_MS) <= reset_ms) {
            /* reset elsewhere after this node first counted the key: what
             * it holds is from before (up to a sync interval after, which
             * it gives up); what the others count from now on is added */
            forget_local(st, e);
            e->seen = total;
            e->inflight = 0;
            SL__HY_CNT(st, fleet_resets_applied, 1);
            return;
        }
    }
    if (total >= e->seen + d)
        others = total - e->seen - d;
    else /* the counter started again (expired, Redis emptied): all of it is new */
        others = total > d ? total - d : 0;
    e->seen = total;
    e->inflight = 0;
    if (others == 0)
        return;
    if (windowed(&e->l)) {
        /* counted in their (sub-)window. A fixed window this node has left
         * must not get them (they would count in the later one); a sliding
         * window's state that has moved on counts them in a later
         * sub-window instead, where they weigh at least as much and for
         * longer: on the side of denying, never lost */
        __int128 end = ((__int128)e->w + 1) * span_ns(&e->l) - 1;
        if (e->superseded && e->l.algo == SL_ALGO_FIXED_WINDOW)
            return;
        if (at > end)
            at = (int64_t)end;
    }
    if (sl__limiter_absorb(st->lim, e->key, e->key_len, &e->l, at, others) == SL_OK) {
        SL__HY_CNT(st, absorbed, others);
        if (at > e->last_ns)
            e->last_ns = at;
    }
}

/* ------------------------------------------------------------ operations */

static void on_kick(uv_timer_t *t)
{
    struct sl__hystore *st = t->data;

    st->sync_scheduled = false;
    if (!st->closing)
        sl__hy_sync_run(st, st->last_now_ns);
}

/* A sync is due at `now`: run it once the check has returned. */
static void note_time(struct sl__hystore *st, int64_t now_ns)
{
    if (now_ns > st->last_now_ns)
        st->last_now_ns = now_ns;
    if (now_ns >= st->next_sync_ns && !st->sync_scheduled && !st->closing && !st->cfg.manual_sync) {
        st->sync_scheduled = true;
        uv_timer_start(&st->kick, on_kick, 0, 0);
    }
}

static void on_tick(uv_timer_t *t)
{
    struct sl__hystore *st = t->data;
    uint64_t syncs = atomic_load_explicit(&st->ctr.syncs, memory_order_relaxed);

    /* no request made a sync due since the last tick: push what waits */
    if (!st->closing && syncs == st->syncs_at_tick && st->last_now_ns != INT64_MIN)
        sl__hy_sync_run(st, st->last_now_ns);
    st->syncs_at_tick = atomic_load_explicit(&st->ctr.syncs, memory_order_relaxed);
}

/* Does this snapshot have a limit that needs the Redis path? Worked out
 * once per snapshot (a reference is kept so the pointer stays its own). */
static void note_limit(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
                       bool unlimited)
{
    bool *plain = arg;

    (void)path;
    (void)quota_mode;
    (void)unlimited;
    if (l != NULL && in_redis(l))
        *plain = false;
}

static bool needs_redis(struct sl__hystore *st, const struct sl__store_req *q)
{
    const struct sl_request *req = q->req;

    for (size_t i = 0; req->descriptors != NULL && i < req->n_descriptors; i++)
        if (req->descriptors[i].limit != NULL && in_redis(req->descriptors[i].limit))
            return true;
    if (q->rules == NULL) {
        for (size_t i = 0; i < q->n; i++)
            for (size_t k = 0; k < q->m[i].n_limits; k++)
                if (in_redis(q->m[i].limits[k]))
                    return true;
        return false;
    }
    if (q->rules != st->rules_seen) {
        bool plain = true;
        sl_rules_foreach_limit(q->rules, note_limit, &plain);
        if (st->rules_seen != NULL)
            sl_rules_unref(st->rules_seen);
        st->rules_seen = sl_rules_ref((sl_rules *)q->rules);
        st->rules_plain = plain;
    }
    if (st->rules_plain)
        return false;
    /* this snapshot has some: does this request meet one? */
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl__resolved rv;
    if (sl__rules_resolve(q->rules, req, m, &rv) != SL_OK)
        return false; /* the local check reports the error */
    for (size_t i = 0; i < req->n_descriptors; i++)
        for (size_t k = 0; k < m[i].n_limits; k++)
            if (in_redis(m[i].limits[k]))
                return true;
    return false;
}

static int decide(struct sl__hystore *st, const struct sl__store_req *q, struct sl_result *res)
{
    if (q->rules != NULL)
        return sl_limiter_check(st->lim, q->rules, q->req, res);
    return sl_limiter_check_matched(st->lim, q->m, q->n, q->req, res);
}

static int check(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    struct sl__hystore *st = of(s);
    struct sl_result res;
    int r;

    if (needs_redis(st, q)) {
        SL__HY_CNT(st, redis_path, 1);
        return st->inner->ops->check(st->inner, q, cb, arg);
    }
    SL__HY_CNT(st, checks, 1);
    r = decide(st, q, &res);
    note_time(st, q->req->now_ns);
    cb(arg, r, r == SL_OK ? &res : NULL, SL__BY_STATE);
    return SL_OK;
}

static int peek(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    struct sl__hystore *st = of(s);
    const struct sl_request *req = q->req;
    struct sl_request zero = *req;
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl__store_req qz = *q;

    if (needs_redis(st, q)) {
        SL__HY_CNT(st, redis_path, 1);
        return st->inner->ops->peek(st->inner, q, cb, arg);
    }
    if (req->n_descriptors > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < req->n_descriptors; i++) {
        d[i] = req->descriptors[i];
        d[i].hits = 0;
    }
    zero.descriptors = d;
    zero.hits = 0;
    qz.req = &zero;
    return check(s, &qz, cb, arg);
}

struct sl__hyshared *sl__hyshared_new(void)
{
    struct sl__hyshared *sh = calloc(1, sizeof(*sh));

    if (sh == NULL)
        return NULL;
    sh->redis = sl__rshared_new();
    sh->sync = sl__rnode_shared_new();
    if (sh->redis == NULL || sh->sync == NULL || uv_mutex_init(&sh->lock) != 0) {
        sl__rshared_free(sh->redis);
        sl__rnode_shared_free(sh->sync);
        free(sh);
        return NULL;
    }
    return sh;
}

void sl__hyshared_free(struct sl__hyshared *sh)
{
    if (sh == NULL)
        return;
    sl__rshared_free(sh->redis);
    sl__rnode_shared_free(sh->sync);
    uv_mutex_destroy(&sh->lock);
    free(sh);
}

/* Forget the matches' states in this worker's table and in every other
 * worker's of the process (each table takes its own shard locks, so
 * another thread's may be reset from here; the list is the registry's
 * lock's). SL_OK when any table had one, SL_ENOENT when none did. */
static int reset_tables(struct sl__hystore *st, const struct sl_match *m, size_t n)
{
    int r = sl_limiter_reset(st->lim, m, n);

    if (st->shared == NULL || (r != SL_OK && r != SL_ENOENT))
        return r;
    uv_mutex_lock(&st->shared->lock);
    for (struct sl__hystore *o = st->shared->stores; o != NULL; o = o->sibling)
        if (o != st && sl_limiter_reset(o->lim, m, n) == SL_OK)
            r = SL_OK;
    uv_mutex_unlock(&st->shared->lock);
    return r;
}

/* Reset the fleet's view of every synced limit of match m at now_ns: this
 * worker's entries of it give up what they hold (pending deltas are from
 * before; an answer already on its way is too), and the counters in
 * Redis are deleted with the key's reset marker set, which every other
 * node acts on at its next sync. */
static void reset_fleet(struct sl__hystore *st, const struct sl_match *m, int64_t now_ns)
{
    if (m->unlimited || m->key_len > SL__HY_KEY_MAX)
        return;
    for (size_t j = 0; j < m->n_limits && j < SL_MAX_LIMITS; j++) {
        const struct sl_limit *l = m->limits[j];
        uint64_t h[2];
        if (l == NULL || !syncable(l))
            continue;
        key_hash(m->key, m->key_len, l, h);
        for (uint32_t li = 0; li < st->n_live; li++) {
            struct sl__hy_ent *e = &st->ents[st->live[li]];
            if (e->h[0] != h[0] || e->h[1] != h[1])
                continue;
            SL__HY_SET(st, kept,
                       atomic_load_explicit(&st->ctr.kept, memory_order_relaxed) - e->pending);
            e->pending = 0;
            e->reset_ms = now_ns / SL_NS_PER_MS; /* the marker's time, as sent */
            e->skip_absorb = e->in_call;
        }
        sl__hy_reset_fleet(st, h, l, now_ns);
    }
}

/* Forget the state of the matches on every worker of this node, and in
 * the fleet: see reset_fleet and docs/distributed.md. */
static int reset(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    struct sl__hystore *st = of(s);
    struct sl_match m;
    int64_t now_ns = q->req != NULL ? q->req->now_ns : st->last_now_ns;
    int r = SL_OK;

    if (needs_redis(st, q)) {
        SL__HY_CNT(st, redis_path, 1);
        return st->inner->ops->reset(st->inner, q, cb, arg);
    }
    if (q->rules == NULL) {
        r = reset_tables(st, q->m, q->n);
        for (size_t i = 0; i < q->n && (r == SL_OK || r == SL_ENOENT); i++)
            reset_fleet(st, &q->m[i], now_ns);
    } else {
        for (size_t i = 0; i < q->req->n_descriptors && (r == SL_OK || r == SL_ENOENT); i++) {
            r = sl_rules_match(q->rules, q->req, i, &m);
            if (r == SL_OK) {
                r = reset_tables(st, &m, 1);
                if (r == SL_OK || r == SL_ENOENT)
                    reset_fleet(st, &m, now_ns);
            }
        }
    }
    if (r != SL_OK && r != SL_ENOENT)
        return r;
    return peek(s, q, cb, arg);
}

/* Concurrency leases are only ever taken on the Redis path; those of
 * adaptive_concurrency, decided on this node, in the local table. */
static int release(struct sl__store *s, const struct sl__store_lease *rl, sl__store_cb cb,
                   void *arg)
{
    struct sl__hystore *st = of(s);
    int rc = sl_limiter_release_latency(st->lim, rl->lease, rl->len, rl->now_ns, rl->latency_ns);

    if (rc != SL_EINVAL) { /* a token of the local table (redis.c's release says why) */
        cb(arg, rc, NULL, SL__BY_STATE);
        return SL_OK;
    }
    SL__HY_CNT(st, redis_path, 1);
    return st->inner->ops->release(st->inner, rl, cb, arg);
}

/* Local decisions never wait for Redis: up while the syncs go through,
 * degraded while they cannot (each node then decides alone), starting
 * until the first connection. */
static void health(const struct sl__store *s, struct sl__store_health *out)
{
    const struct sl__hystore *st = of(s);
    const struct sl__redis_config *rc = st->cfg.redis;

    out->why[0] = '\0';
    if (atomic_load_explicit(&st->ctr.connected, memory_order_relaxed)) {
        out->state = SL__STORE_UP;
        return;
    }
    out->state = atomic_load_explicit(&st->ctr.ever_connected, memory_order_relaxed)
                     ? SL__STORE_DEGRADED
                     : SL__STORE_STARTING;
    if (rc->sentinels[0] != '\0') /* the master's address is the loop thread's */
        snprintf(out->why, sizeof(out->why),
                 "hybrid: redis master '%.120s' not syncing; deciding locally, counts kept",
                 rc->master_name);
    else
        snprintf(out->why, sizeof(out->why),
                 "hybrid: redis %s%.100s:%d not syncing; deciding locally, counts kept",
                 rc->cluster ? "cluster (seed) " : "", rc->host, rc->port);
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static void destroy(struct sl__store *s)
{
    struct sl__hystore *st = of(s);

    if (st->shared != NULL) { /* no other worker's reset reaches it from now on */
        uv_mutex_lock(&st->shared->lock);
        for (struct sl__hystore **p = &st->shared->stores; *p != NULL; p = &(*p)->sibling) {
            if (*p == st) {
                *p = st->sibling;
                break;
            }
        }
        uv_mutex_unlock(&st->shared->lock);
    }
    st->closing = true;
    sl__hy_sync_close(st); /* calls out come back lost: their deltas pending */
    sl__hy_final_push(st);
    uv_close((uv_handle_t *)&st->kick, on_closed);
    uv_close((uv_handle_t *)&st->tick, on_closed);
    uv_run(st->loop, UV_RUN_NOWAIT);
    if (st->inner != NULL)
        sl__store_free(st->inner);
    if (st->rules_seen != NULL)
        sl_rules_unref(st->rules_seen);
    sl_limiter_free(st->lim);
    free(st->calls); /* their idx point into st->order */
    free(st->argv);
    free(st->argvlen);
    free(st->argbuf);
    free(st->order); /* the sync's (hybrid_sync.c), their handles closed above */
    free(st->pairs);
    free(st->nodes);
    free(st->map);
    free(st->ents);
    free(st->index);
    free(st->free_ents);
    free(st->live);
    free(st);
}

static const struct sl__store_ops hybrid_ops = {
    .name = "hybrid",
    .check = check,
    .peek = peek,
    .reset = reset,
    .release = release,
    .health = health,
    .free = destroy,
};

static int make_limiter(const struct sl__hybrid_config *c, sl_limiter **out)
{
    struct sl_limiter_config lc;
    size_t got = 0;

    sl_limiter_config_init(&lc);
    lc.table.max_bytes = c->max_bytes;
    while (got < sizeof(lc.table.secret)) {
        ssize_t n = getrandom(lc.table.secret + got, sizeof(lc.table.secret) - got, 0);
        if (n <= 0)
            return SL_EINVAL;
        got += (size_t)n;
    }
    return sl_limiter_new(&lc, out);
}

int sl__store_hybrid_new(uv_loop_t *loop, const struct sl__hybrid_config *c, struct sl__store **out)
{
    return sl__store_hybrid_new_logged(loop, c, NULL, NULL, NULL, out);
}

int sl__store_hybrid_new_logged(uv_loop_t *loop, const struct sl__hybrid_config *c,
                                sl__store_log_fn log, void *log_arg, struct sl__hyshared *shared,
                                struct sl__store **out)
{
    /* What the Redis path's store is made with (.lim: the table, made below). */
    struct sl__store_env redis_env = {.loop = loop,
                                      .log = log,
                                      .log_arg = log_arg,
                                      .shared = shared != NULL ? shared->redis : NULL};
    struct sl__hystore *st;
    int rc;

    *out = NULL;
    if (c->redis == NULL || c->max_keys == 0 || c->batch == 0 || c->sync_interval_ms <= 0)
        return SL_EINVAL;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return SL_ENOMEM;
    st->base.ops = &hybrid_ops;
    st->loop = loop;
    st->cfg = *c;
    st->last_now_ns = INT64_MIN;
    st->next_sync_ns = INT64_MIN;
    for (st->index_cap = 16; st->index_cap < 2 * c->max_keys; st->index_cap *= 2)
        ;
    st->ents = calloc(c->max_keys, sizeof(*st->ents));
    st->index = calloc(st->index_cap, sizeof(*st->index));
    st->free_ents = calloc(c->max_keys, sizeof(*st->free_ents));
    st->live = calloc(c->max_keys, sizeof(*st->live));
    uv_timer_init(loop, &st->kick);
    uv_timer_init(loop, &st->tick);
    st->kick.data = st;
    st->tick.data = st;
    uv_unref((uv_handle_t *)&st->kick);
    uv_unref((uv_handle_t *)&st->tick);
    if (st->ents == NULL || st->index == NULL || st->free_ents == NULL || st->live == NULL) {
        rc = SL_ENOMEM;
        goto fail;
    }
    for (uint32_t i = c->max_keys; i-- > 0;)
        st->free_ents[st->n_free++] = i;
    rc = make_limiter(c, &st->lim);
    if (rc != SL_OK)
        goto fail;
    sl__limiter_on_commit(st->lim, on_commit, st);
    redis_env.lim = st->lim;
    rc = sl__store_redis_new_logged(&redis_env, c->redis, &st->inner);
    if (rc != SL_OK)
        goto fail;
    if (shared != NULL) {
        uv_mutex_lock(&shared->lock);
        st->shared = shared;
        st->sibling = shared->stores;
        shared->stores = st;
        uv_mutex_unlock(&shared->lock);
    }
    rc = sl__hy_sync_init(st);
    if (rc != SL_OK)
        goto fail;
    if (!c->manual_sync)
        uv_timer_start(&st->tick, on_tick, (uint64_t)c->sync_interval_ms,
                       (uint64_t)c->sync_interval_ms);
    *out = &st->base;
    return SL_OK;
fail:
    destroy(&st->base);
    return rc;
}

void sl__store_hybrid_sync(struct sl__store *s, int64_t now_ns)
{
    struct sl__hystore *st = of(s);

    if (now_ns > st->last_now_ns)
        st->last_now_ns = now_ns;
    sl__hy_sync_run(st, st->last_now_ns);
}

struct sl__store *sl__store_hybrid_inner(struct sl__store *s)
{
    return of(s)->inner;
}

void sl__store_hybrid_stats(const struct sl__store *s, struct sl__hybrid_stats *out)
{
    const struct sl__hystore *st = of(s);
#define G(f) out->f = atomic_load_explicit(&st->ctr.f, memory_order_relaxed)
    G(checks);
    G(redis_path);
    G(syncs);
    G(sync_calls);
    G(sync_keys);
    G(sync_failures);
    G(sync_redirects);
    G(absorbed);
    G(deltas_dropped);
    G(untracked);
    G(final_pushes);
    G(fleet_resets);
    G(fleet_resets_applied);
    G(fleet_resets_unsent);
    G(keys);
    G(kept);
    G(in_flight);
    G(connected);
#undef G
}
