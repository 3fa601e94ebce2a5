/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs.c - envoy.service.rate_limit_quota.v3.RateLimitQuotaService/
 * StreamRateLimitQuotas: Envoy's rate_limit_quota filter reports, bucket by
 * bucket, what it allowed and denied; sluiced answers each bucket with an
 * assignment (docs/rlqs.md).
 *
 * A stream's first message names the rules' domain. Each bucket id is
 * matched as one descriptor of that domain by the rules matcher the rate
 * limit service uses, in whichever order of its pairs is a path of the
 * rules tree (a map has no order; sl__decide_match_unordered).
 * What the match gives:
 *  - no rule: ALLOW_ALL, or DENY_ALL where the domain says on_unmatched:
 *    deny; an `unlimited` rule or the kill switch "off": ALLOW_ALL;
 *  - requests_per_unit: 0 (enforced): DENY_ALL;
 *  - a limit that is not a rate (concurrency, adaptive_concurrency, a
 *    sliding_log's min_interval): refused, logged, and answered as if no
 *    rule matched;
 *  - rate limits: a pool, one per counter (the match's key and the limit),
 *    shared by every stream of the process that reports a bucket matching
 *    it; the pool's rate (the strictest of the limits) and burst are
 *    divided among its members (rlqs_assign.h) and each member is sent a
 *    token_bucket. A shadow limit or the kill switch "shadow" sends
 *    ALLOW_ALL and counts what the share would have denied.
 * Assignments carry a TTL of TTL_INTERVALS report intervals. A pool divides
 * again when a member joins or leaves, when a member's demand moved by more
 * than REBALANCE of what the last division used, when a smaller
 * assignment was sent or a departed member's TTL passed; each stream looks
 * at its buckets every SL__GRPC_TICK_MS (sl__grpc_tick) and sends what
 * changed, and renews an assignment half way through its TTL. On a rules
 * reload or a kill switch change every stream matches its buckets again: a
 * bucket whose rule went is sent abandon_action and forgotten.
 *
 * Threads: the pools are the process's, under one mutex, taken per report
 * and per tick of a stream (never per request); a stream is only touched
 * on its connection's worker. Sending happens outside the mutex: an
 * assignment's hold is raised before it is sent and lowered only after
 * (rlqs_assign.h), so the bound holds across threads. /metrics and
 * GET /v1/stats take the mutex to read (sl__rlqs_render_*), per scrape.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "decide.h"
#include "grpc.h"
#include "killswitch.h"
#include "log.h"
#include "rlqs_codec.h"
#include "server-t.h"
#include "stores.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

#define TTL_INTERVALS   3
#define TTL_MIN_NS      (1 * SL_NS_PER_S)
#define TTL_MAX_NS      (600 * SL_NS_PER_S)
#define REBALANCE       0.10 /* demand change that divides again */
#define FLOOR_FRAC      0.05 /* an idle member's demand: 5% of an equal share */
#define RESEND          0.01 /* a share that moved by more than this is sent */
#define ACTIONS_PER_MSG 64
#define POOL_SLOTS      4096
#define SWEEP_NS        (1 * SL_NS_PER_S)
#define DIVIDE_EVERY_NS (100 * SL_NS_PER_MS) /* a pool divides at most this often */
#define ROUND_NS        (1 * SL_NS_PER_S)    /* a fleet's round: each pool's demand shared */
#define KEEP_ROUNDS     3                    /* a node's field outlives its last round by this */

enum bclass {
    B_NONE,  /* not classified yet */
    B_ALLOW, /* ALLOW_ALL: no rule, unlimited, kill switch off */
    B_DENY,  /* DENY_ALL */
    B_POOL,  /* a member of a pool: token_bucket (ALLOW_ALL when the pool is shadow) */
};

struct pool;

/* One bucket of one stream. */
struct bucket {
    uint64_t hash;
    char *blob; /* the id, pairs sorted by key: "key\0value\0..." */
    size_t blob_len;
    struct sl_entry entries[SL_MAX_ENTRIES]; /* into blob, sorted by key */
    size_t n_entries;
    enum bclass cls;
    bool ruled;        /* a rule applied (its removal abandons the bucket) */
    bool shadow_ban;   /* a requests_per_unit: 0 in shadow: ALLOW_ALL, all would-deny */
    struct pool *pool; /* B_POOL */
    size_t idx;        /* its member in pool->m */
    bool sent_any;     /* an assignment went out */
    enum sl__rlqs_kind sent_kind;
    double sent_rate;
    int64_t sent_burst;
    struct sl__rlqs_bucket sent_tb; /* the token bucket sent */
    int64_t sent_ns;                /* when */
    int64_t elapsed_ns;             /* its last report's time_elapsed */
};

/* One counter divided among the members that report it. */
struct pool {
    struct pool *next; /* hash chain */
    uint64_t hash;
    char *key; /* the match's key and the limit's identity */
    size_t key_len;
    char label[160]; /* for /metrics: the rule's path */
    struct sl__rlqs_share share;
    bool shadow;
    bool dirty;
    int64_t divided_ns;        /* the last division */
    struct sl__rlqs_member *m; /* [0..n), room for cap */
    struct bucket **owner;     /* NULL: a departed member */
    double *used;              /* the demand the last division used */
    size_t n, cap;             /* cap <= SL__RLQS_MAX_MEMBERS */
    /* In a fleet: the part of share.rate this node divides. */
    bool fleet;         /* the rate divided is fleet_rate, not share.rate */
    bool viewed;        /* a round reached the store for this pool */
    double fleet_rate;  /* this node's cap */
    size_t fleet_inst;  /* instances of the fleet in the last view */
    size_t fleet_nodes; /* nodes in it */
    /* Reported by its members since the pool formed (GET /v1/stats). */
    uint64_t allowed, denied;
};

/* One stream's state (op->u.rlqs). */
struct sl__rlqs_stream {
    struct sl__worker *w;
    char domain[SL__KS_DOMAIN_MAX + 1];
    size_t domain_len;
    sl_rules *rules; /* the snapshot the buckets were matched against (a reference) */
    enum sl__ks_mode ks;
    struct bucket **b;
    size_t n, cap;
    size_t max_buckets;
    int64_t interval_ns; /* the reports' interval, from time_elapsed */
};

static struct {
    pthread_mutex_t mu;
    struct pool *slot[POOL_SLOTS];
    size_t pools, streams, buckets;
    uint64_t allowed, denied, would_deny, refused_streams, nonrate;
    int64_t swept_ns;
    /* the fleet's sharer (store.type redis or hybrid) */
    pthread_cond_t cv;
    int fleet_state; /* 0: not looked at, 1: the store shares nothing, 2: sharing */
    bool kick;       /* a pool is waiting for its first round */
    struct sl__store_fleet *store;
    char node[160];            /* this node's id: host:pid:random */
    size_t nodes_seen;         /* the most nodes a pool's last view had */
    uint64_t rounds, failures; /* pools shared, and failed to */
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h;
}
#define FNV0 UINT64_C(0xcbf29ce484222325)

/* TTLs run in real time on the Envoys: a monotonic clock, not the
 * decisions' (which a test can freeze). */
static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SL_NS_PER_S + ts.tv_nsec;
}

static int64_t ttl_of(const struct sl__rlqs_stream *rs)
{
    int64_t t =
        rs->interval_ns > TTL_MAX_NS / TTL_INTERVALS ? TTL_MAX_NS : rs->interval_ns * TTL_INTERVALS;

    return t < TTL_MIN_NS ? TTL_MIN_NS : t > TTL_MAX_NS ? TTL_MAX_NS : t;
}

/* ------------------------------------------------------------ pools (R.mu held) */

static void pool_unlink_member(struct pool *p, size_t i)
{
    p->n--;
    if (i != p->n) {
        p->m[i] = p->m[p->n];
        p->owner[i] = p->owner[p->n];
        p->used[i] = p->used[p->n];
        if (p->owner[i] != NULL)
            p->owner[i]->idx = i;
    }
    p->dirty = true;
}

static void pool_free_if_empty(struct pool *p)
{
    if (p->n > 0)
        return;
    struct pool **pp = &R.slot[p->hash % POOL_SLOTS];
    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    free(p->key);
    free(p->m);
    free(p->owner);
    free(p->used);
    free(p);
    R.pools--;
}

/* Departed members whose TTL passed go. */
static void pool_expire(struct pool *p, int64_t now)
{
    for (size_t i = p->n; i-- > 0;)
        if (p->owner[i] == NULL && p->m[i].hold_until_ns <= now)
            pool_unlink_member(p, i);
}

/* The part of the limit this node divides: all of it, or in a fleet its
 * cap (the burst in proportion, at least one token while there is rate). */
static struct sl__rlqs_share pool_share(const struct pool *p)
{
    struct sl__rlqs_share s = p->share;

    if (!p->fleet)
        return s;
    s.rate = p->fleet_rate < p->share.rate ? p->fleet_rate : p->share.rate;
    s.burst = (int64_t)floor((double)p->share.burst * (s.rate / p->share.rate));
    if (s.burst < 1)
        s.burst = 1;
    return s;
}

static void pool_divide(struct pool *p, int64_t now)
{
    struct sl__rlqs_share s = pool_share(p);

    pool_expire(p, now);
    sl__rlqs_divide(&s, p->m, p->n, now);
    for (size_t i = 0; i < p->n; i++)
        p->used[i] = p->m[i].demand;
    p->dirty = false;
    p->divided_ns = now;
}

/* A dirty pool divides again once DIVIDE_EVERY_NS has passed since its
 * last division: every stream's flush would otherwise divide it, and an
 * assignment sent gives capacity back and dirties it again, so a thousand
 * Envoys on one bucket made a thousand divisions a round. Until then each
 * member keeps the last division's share, which the holds still cover;
 * the streams' ticks come back for it. */
static bool pool_due(const struct pool *p, int64_t now)
{
    return p->dirty && (p->divided_ns == 0 || now - p->divided_ns >= DIVIDE_EVERY_NS);
}

static void sweep(int64_t now)
{
    if (now - R.swept_ns < SWEEP_NS)
        return;
    R.swept_ns = now;
    for (size_t s = 0; s < POOL_SLOTS; s++) {
        for (struct pool *p = R.slot[s], *next; p != NULL; p = next) {
            next = p->next;
            size_t n = p->n;
            pool_expire(p, now);
            if (p->n != n && p->n > 0)
                pool_divide(p, now);
            pool_free_if_empty(p);
        }
    }
}

static struct pool *pool_get(const char *key, size_t key_len, const struct sl__rlqs_share *share,
                             bool shadow, const char *label)
{
    uint64_t h = fnv(key, key_len, FNV0);
    struct pool *p;

    for (p = R.slot[h % POOL_SLOTS]; p != NULL; p = p->next)
        if (p->hash == h && p->key_len == key_len && memcmp(p->key, key, key_len) == 0)
            return p;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->key = malloc(key_len);
    if (p->key == NULL) {
        free(p);
        return NULL;
    }
    memcpy(p->key, key, key_len);
    p->key_len = key_len;
    p->hash = h;
    p->share = *share;
    p->shadow = shadow;
    snprintf(p->label, sizeof(p->label), "%s", label != NULL ? label : "");
    p->next = R.slot[h % POOL_SLOTS];
    R.slot[h % POOL_SLOTS] = p;
    R.pools++;
    if (R.fleet_state == 2 && !shadow) { /* nothing to divide before the first round */
        p->fleet = true;
        p->fleet_rate = 0.0;
        R.kick = true;
        pthread_cond_signal(&R.cv);
    }
    return p;
}

/* b joins p as a live member with nothing held. False: p has
 * SL__RLQS_MAX_MEMBERS members already. */
static bool member_add(struct pool *p, struct bucket *b)
{
    if (p->n == p->cap) {
        if (p->cap >= SL__RLQS_MAX_MEMBERS)
            return false;
        p->cap = p->cap ? p->cap * 2 : 4;
        p->m = sl__xrealloc(p->m, p->cap * sizeof(p->m[0]));
        p->owner = sl__xrealloc(p->owner, p->cap * sizeof(p->owner[0]));
        p->used = sl__xrealloc(p->used, p->cap * sizeof(p->used[0]));
    }
    memset(&p->m[p->n], 0, sizeof(p->m[p->n]));
    p->m[p->n].live = true;
    p->owner[p->n] = b;
    p->used[p->n] = 0;
    b->idx = p->n++;
    b->pool = p;
    b->cls = B_POOL;
    p->dirty = true;
    return true;
}

/* b leaves its pool: its member stays, departed, until its TTL passes. */
static void leave_pool(struct bucket *b, int64_t now)
{
    struct pool *p = b->pool;

    if (p == NULL)
        return;
    p->owner[b->idx] = NULL;
    p->m[b->idx].live = false;
    p->m[b->idx].demand = 0;
    if (p->m[b->idx].hold_until_ns <= now)
        pool_unlink_member(p, b->idx);
    p->dirty = true;
    b->pool = NULL;
    pool_free_if_empty(p);
}

/* ------------------------------------------------------------ fleets */

/* What a round shares of one pool: taken under R.mu, sent without it. */
struct snap {
    uint64_t hash;
    char *key;
    size_t key_len;
    struct sl__rlqs_share share;
    double claim;    /* the cap or what the members hold, the larger */
    int64_t keep_ms; /* how long the field must outlive this round */
    double *demand;  /* the live members' */
    size_t n;
};

static struct pool *pool_find(uint64_t h, const char *key, size_t key_len)
{
    for (struct pool *p = R.slot[h % POOL_SLOTS]; p != NULL; p = p->next)
        if (p->hash == h && p->key_len == key_len && memcmp(p->key, key, key_len) == 0)
            return p;
    return NULL;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every fleet pool's state (R.mu held); *n of them. */
static struct snap *snapshot(size_t *n, int64_t now)
{
    size_t k = 0;
    struct snap *sn;

    for (size_t s = 0; s < POOL_SLOTS; s++)
        for (const struct pool *p = R.slot[s]; p != NULL; p = p->next)
            k += p->fleet;
    *n = 0;
    if (k == 0)
        return NULL;
    sn = sl__xzalloc(k * sizeof(*sn));
    for (size_t s = 0; s < POOL_SLOTS; s++) {
        for (const struct pool *p = R.slot[s]; p != NULL; p = p->next) {
            if (!p->fleet)
                continue;
            struct snap *x = &sn[(*n)++];
            double held = 0.0;
            int64_t keep = KEEP_ROUNDS * ROUND_NS;
            x->hash = p->hash;
            x->key = sl__xrealloc(NULL, p->key_len);
            memcpy(x->key, p->key, p->key_len);
            x->key_len = p->key_len;
            x->share = p->share;
            x->demand = sl__xzalloc((p->n + 1) * sizeof(double));
            for (size_t i = 0; i < p->n; i++) {
                const struct sl__rlqs_member *m = &p->m[i];
                double h = sl__rlqs_held_rate(m, now);
                held += m->next_rate > h ? m->next_rate : h;
                if (m->hold_until_ns - now > keep)
                    keep = m->hold_until_ns - now;
                if (m->live)
                    x->demand[x->n++] = m->demand;
            }
            x->claim = p->fleet_rate > held ? p->fleet_rate : held;
            x->keep_ms = keep / SL_NS_PER_MS + 1;
        }
    }
    return sn;
}

/* "<expiry ms> <claim> <demand>..." (malloc'd). */
static char *fleet_value(const struct snap *x, int64_t wall)
{
    size_t cap = 64 + x->n * 26, len;
    char *v = sl__xrealloc(NULL, cap);

    len = (size_t)snprintf(v, cap, "%lld %.9g", (long long)(wall + x->keep_ms), x->claim);
    for (size_t i = 0; i < x->n && len < cap; i++)
        len += (size_t)snprintf(v + len, cap - len, " %.6g", x->demand[i]);
    return v;
}

/* The other nodes of a reply (pairs "field\0value\0") into nodes[1..),
 * their demands into d[]: the number of nodes, this one included. */
static size_t fleet_view(const char *out, size_t len, int64_t wall, struct sl__rlqs_node *nodes,
                         double *d, size_t *inst)
{
    size_t k = 1, used = nodes[0].n;

    for (const char *f = out; f < out + len;) {
        const char *v = f + strlen(f) + 1;
        if (v >= out + len)
            break;
        const char *next = v + strlen(v) + 1;
        int64_t exp;
        double claim;
        long c = strcmp(f, R.node) == 0 || k == SL__RLQS_MAX_MEMBERS
                     ? -1
                     : sl__rlqs_fleet_parse(v, &exp, &claim, d + used, SL__RLQS_MAX_MEMBERS - used);
        if (c >= 0 && exp >= wall) {
            nodes[k++] = (struct sl__rlqs_node){claim, d + used, (size_t)c};
            used += (size_t)c;
        }
        f = next;
    }
    *inst = used;
    return k;
}

/* One pool's round: publish, read the fleet, set this node's cap. */
static void share_one(struct snap *x, size_t *seen)
{
    static struct sl__rlqs_node nodes[SL__RLQS_MAX_MEMBERS];
    static double d[SL__RLQS_MAX_MEMBERS];
    char name[24], *out = NULL, *value;
    size_t len = 0, inst = 0, k = 0;
    int64_t wall = wall_ms();
    double cap = 0.0;

    snprintf(name, sizeof(name), "%016" PRIx64, x->hash);
    value = fleet_value(x, wall);
    struct sl__server_fleet_put put = {name, R.node, value, wall, KEEP_ROUNDS * 1000 + x->keep_ms};
    int rc = sl__server_fleet_share(R.store, &put, &out, &len);
    free(value);
    if (rc == SL_OK) {
        size_t own = x->n < SL__RLQS_MAX_MEMBERS ? x->n : SL__RLQS_MAX_MEMBERS;
        memcpy(d, x->demand, own * sizeof(double));
        nodes[0] = (struct sl__rlqs_node){x->claim, d, own};
        k = fleet_view(out, len, wall, nodes, d, &inst);
        cap = sl__rlqs_fleet_cap(&x->share, nodes, k, 0);
    }
    free(out);
    if (rc == SL_OK && cap > x->claim * (1 + 1e-9)) { /* a raise: published before it applies */
        double was = x->claim;
        x->claim = cap;
        put.value = value = fleet_value(x, wall);
        if (sl__server_fleet_share(R.store, &put, &out, &len) != SL_OK)
            cap = was; /* not published: not raised */
        free(out);
        free(value);
    }
    pthread_mutex_lock(&R.mu);
    struct pool *p = pool_find(x->hash, x->key, x->key_len);
    if (rc != SL_OK) {
        R.failures++;
        if (p != NULL && !p->viewed) { /* never saw the fleet: a part for each node last seen */
            p->fleet_rate = p->share.rate / (double)(R.nodes_seen > 0 ? R.nodes_seen : 1);
            p->dirty = true;
        }
    } else {
        R.rounds++;
        if (k > *seen)
            *seen = k;
        if (p != NULL) {
            if (fabs(cap - p->fleet_rate) > 1e-9 * p->share.rate || !p->viewed)
                p->dirty = true;
            p->fleet_rate = cap;
            p->viewed = true;
            p->fleet_inst = inst;
            p->fleet_nodes = k;
        }
    }
    pthread_mutex_unlock(&R.mu);
}

static void *fleet_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&R.mu);
    for (;;) {
        if (!R.kick) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += ROUND_NS / SL_NS_PER_S;
            pthread_cond_timedwait(&R.cv, &R.mu, &ts);
        }
        R.kick = false;
        size_t n = 0, seen = 0;
        struct snap *sn = snapshot(&n, now_ns());
        pthread_mutex_unlock(&R.mu);
        for (size_t i = 0; i < n; i++) {
            share_one(&sn[i], &seen);
            free(sn[i].key);
            free(sn[i].demand);
        }
        free(sn);
        pthread_mutex_lock(&R.mu);
        if (seen > 0)
            R.nodes_seen = seen;
    }
    return NULL;
}

/* The first stream decides whether pools are shared (R.mu held). */
static void fleet_ensure(const struct sl__server *srv)
{
    static struct sl__lograte rl;
    struct sl__store_fleet *f = NULL;
    char host[64] = "";
    pthread_attr_t at;
    pthread_t t;

    if (R.fleet_state != 0)
        return;
    R.fleet_state = 1;
    if (sl__server_fleet_open(srv, &f) != SL_OK || f == NULL)
        return;
    gethostname(host, sizeof(host) - 1);
    snprintf(R.node, sizeof(R.node), "%s:%ld:%08" PRIx64, host, (long)getpid(),
             fnv(&f, sizeof(f), (uint64_t)now_ns() ^ (uint64_t)wall_ms()) & 0xffffffffu);
    R.store = f;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, fleet_main, NULL) != 0) {
        sl__log_rate(&rl, SL__LOG_WARN, "grpc.rlqs_fleet", NULL, 0,
                     "rlqs: cannot start the fleet's sharer; dividing per process");
        pthread_attr_destroy(&at);
        return;
    }
    pthread_attr_destroy(&at);
    R.fleet_state = 2;
}

/* ------------------------------------------------------------ matching */

static bool matched(const struct sl_match *m)
{
    return m->n_limits > 0 || m->unlimited;
}

/* Match b's pairs (sorted by key) as one descriptor of rs's domain, in the
 * first order that is a path of the rules tree. */
static void match_bucket(const struct sl__rlqs_stream *rs, const struct bucket *b,
                         struct sl_match *m)
{
    if (sl__decide_match_unordered(rs->rules, (struct sl_str){rs->domain, rs->domain_len},
                                   b->entries, b->n_entries, m) != SL_OK)
        m->n_limits = 0, m->unlimited = false;
}

/* What b gets under rs's rules and kill switch (b->cls, b->ruled): the
 * pool it belongs in, or NULL (R.mu held). Membership is not touched. */
static struct pool *classify_to(struct sl__rlqs_stream *rs, struct bucket *b)
{
    static _Thread_local struct sl_match m;
    static struct sl__lograte rl;
    bool deny_unmatched =
        sl__decide_denies_unmatched(rs->rules, (struct sl_str){rs->domain, rs->domain_len});
    struct sl__rlqs_share enf = {0.0, 0, FLOOR_FRAC}, sh = {0.0, 0, FLOOR_FRAC}, share;
    bool any_enf = false, any_sh = false, ban = false, shadow_ban = false, shadow;
    const char *path = NULL;

    b->cls = deny_unmatched ? B_DENY : B_ALLOW;
    b->shadow_ban = false;
    if (rs->ks == SL__KS_OFF) { /* (b->ruled kept: the switch is no rules change) */
        b->cls = B_ALLOW;
        return NULL;
    }
    b->ruled = false;
    match_bucket(rs, b, &m);
    if (!matched(&m))
        return NULL;
    b->ruled = true;
    path = m.rule_path;
    if (m.unlimited) {
        b->cls = B_ALLOW;
        return NULL;
    }
    for (size_t k = 0; k < m.n_limits; k++) {
        const struct sl_limit *l = m.limits[k];
        if (sl__decide_limit_denies_all(l)) {
            *(l->shadow ? &shadow_ban : &ban) = true;
            continue;
        }
        if (!sl__decide_limit_is_rate(l)) {
            R.nonrate++;
            sl__log_rate(&rl, SL__LOG_WARN, "grpc.rlqs_not_rate",
                         &SL__LOG_STR("rule", path != NULL ? path : ""), 1,
                         "rlqs: rule %s has a %s limit, which a quota assignment cannot carry; "
                         "its buckets are answered as unmatched (%s)",
                         path != NULL ? path : "?", sl_algo_name(l->algo),
                         deny_unmatched ? "DENY_ALL" : "ALLOW_ALL");
            return NULL;
        }
        double rate = (double)l->requests * 1e9 / (double)l->period_ns;
        int64_t burst = sl_limit_quota(l);
        struct sl__rlqs_share *t = l->shadow ? &sh : &enf;
        bool *any = l->shadow ? &any_sh : &any_enf;
        if (!*any || rate < t->rate)
            t->rate = rate;
        if (!*any || burst < t->burst)
            t->burst = burst;
        *any = true;
    }
    if (ban && rs->ks != SL__KS_SHADOW) {
        b->cls = B_DENY;
        return NULL;
    }
    if (ban ||
        (shadow_ban && !any_enf)) { /* a denial in shadow: ALLOW_ALL, every request would-deny */
        b->cls = B_ALLOW;
        b->shadow_ban = true;
        return NULL;
    }
    if (!any_enf && !any_sh) {
        b->cls = B_ALLOW;
        return NULL;
    }
    share = any_enf ? enf : sh;
    shadow = !any_enf || rs->ks == SL__KS_SHADOW;
    if (!(share.rate > 0.0)) {
        b->cls = B_ALLOW;
        return NULL;
    }
    if (share.burst < 1)
        share.burst = 1;
    shadow = shadow || rs->ks == SL__KS_SHADOW;
    /* the counter's key, then the share's numbers and the shadow flag */
    char key[SL_KEY_MAX + 64];
    size_t kl = m.key_len < SL_KEY_MAX ? m.key_len : SL_KEY_MAX;
    memcpy(key, m.key, kl);
    memcpy(key + kl, &share.rate, sizeof(share.rate));
    memcpy(key + kl + 8, &share.burst, sizeof(share.burst));
    key[kl + 16] = shadow;
    struct pool *p = pool_get(key, kl + 17, &share, shadow, path);
    if (p == NULL || (p != b->pool && p->n >= SL__RLQS_MAX_MEMBERS)) {
        sl__log_rate(&rl, SL__LOG_WARN, "grpc.rlqs_pool_full",
                     &SL__LOG_STR("rule", path != NULL ? path : ""), 1,
                     "rlqs: rule %s has %d instances reporting one bucket already; answering "
                     "another as unmatched",
                     path != NULL ? path : "?", SL__RLQS_MAX_MEMBERS);
        if (p != NULL)
            pool_free_if_empty(p);
        return NULL;
    }
    b->cls = B_POOL;
    return p;
}

/* Classify b and move it to the pool it belongs in, if another (R.mu
 * held): a bucket that stays in its pool keeps its member and its hold. */
static void classify(struct sl__rlqs_stream *rs, struct bucket *b, int64_t now)
{
    struct pool *p = classify_to(rs, b);

    if (p != NULL && p == b->pool)
        return;
    leave_pool(b, now);
    if (p == NULL)
        return;
    if (!member_add(p, b)) {
        b->cls = sl__decide_denies_unmatched(rs->rules, (struct sl_str){rs->domain, rs->domain_len})
                     ? B_DENY
                     : B_ALLOW;
        pool_free_if_empty(p);
    }
}

/* ------------------------------------------------------------ the stream's buckets */

static int cmp_entry(const void *a, const void *b)
{
    const struct sl_entry *x = a, *y = b;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int c = memcmp(x->key.p, y->key.p, n);

    return c != 0 ? c : (x->key.len > y->key.len) - (x->key.len < y->key.len);
}

/* The bucket of these pairs: found, or made (NULL: the stream has its cap). */
static struct bucket *bucket_of(struct sl__rlqs_stream *rs, const struct sl__rlqs_usage *u,
                                bool *fresh)
{
    struct sl_entry e[SL_MAX_ENTRIES];
    size_t len = 0;
    uint64_t h = FNV0;

    memcpy(e, u->entries, u->n_entries * sizeof(e[0]));
    qsort(e, u->n_entries, sizeof(e[0]), cmp_entry);
    for (size_t i = 0; i < u->n_entries; i++) {
        h = fnv(e[i].key.p, e[i].key.len, h);
        h = fnv("", 1, h);
        h = fnv(e[i].value.p, e[i].value.len, h);
        h = fnv("", 1, h);
        len += e[i].key.len + e[i].value.len + 2;
    }
    *fresh = false;
    for (size_t k = 0; k < rs->n; k++) {
        struct bucket *b = rs->b[k];
        if (b->hash != h || b->blob_len != len || b->n_entries != u->n_entries)
            continue;
        size_t i = 0;
        for (; i < b->n_entries; i++)
            if (cmp_entry(&b->entries[i], &e[i]) != 0 ||
                b->entries[i].value.len != e[i].value.len ||
                memcmp(b->entries[i].value.p, e[i].value.p, e[i].value.len) != 0)
                break;
        if (i == b->n_entries)
            return b;
    }
    if (rs->n >= rs->max_buckets)
        return NULL;
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 8;
        rs->b = sl__xrealloc(rs->b, rs->cap * sizeof(rs->b[0]));
    }
    struct bucket *b = sl__xzalloc(sizeof(*b));
    char *p = b->blob = sl__xzalloc(len);
    b->hash = h;
    b->blob_len = len;
    b->n_entries = u->n_entries;
    for (size_t i = 0; i < u->n_entries; i++) {
        memcpy(p, e[i].key.p, e[i].key.len);
        b->entries[i].key = (struct sl_str){p, e[i].key.len};
        p += e[i].key.len;
        *p++ = '\0';
        memcpy(p, e[i].value.p, e[i].value.len);
        b->entries[i].value = (struct sl_str){p, e[i].value.len};
        p += e[i].value.len;
        *p++ = '\0';
    }
    rs->b[rs->n++] = b;
    R.buckets++;
    *fresh = true;
    return b;
}

static void bucket_free(struct bucket *b, int64_t now)
{
    leave_pool(b, now);
    free(b->blob);
    free(b);
    R.buckets--;
}

/* ------------------------------------------------------------ sending */

struct pending {
    struct sl__rlqs_action a[ACTIONS_PER_MSG];
    struct bucket *b[ACTIONS_PER_MSG];
    size_t n;
    bool gone[ACTIONS_PER_MSG];   /* abandoned: freed once sent */
    double rate[ACTIONS_PER_MSG]; /* the share sent (token_bucket) */
};

/* What b is to be sent now, if anything (R.mu held). */
static bool due(const struct sl__rlqs_stream *rs, struct bucket *b, int64_t now,
                struct sl__rlqs_action *a, double *rate)
{
    int64_t ttl = ttl_of(rs);
    bool renew = !b->sent_any || now - b->sent_ns >= ttl / 2;

    memset(a, 0, sizeof(*a));
    a->entries = b->entries;
    a->n_entries = b->n_entries;
    a->ttl_ms = ttl / SL_NS_PER_MS;
    if (b->cls == B_ALLOW || b->cls == B_DENY || (b->cls == B_POOL && b->pool->shadow)) {
        a->kind = b->cls == B_DENY ? SL__RLQS_DENY_ALL : SL__RLQS_ALLOW_ALL;
        return renew || b->sent_kind != a->kind;
    }
    if (b->cls != B_POOL)
        return false;
    const struct sl__rlqs_member *m = &b->pool->m[b->idx];
    if (!(m->next_rate > 0.0) || !sl__rlqs_token_bucket(m->next_rate, m->next_burst, &a->tb))
        return false; /* nothing to give yet: what it holds stays */
    a->kind = SL__RLQS_TOKEN_BUCKET;
    *rate = m->next_rate;
    bool changed = !b->sent_any || b->sent_kind != a->kind ||
                   fabs(m->next_rate - b->sent_rate) > RESEND * b->sent_rate ||
                   m->next_burst != b->sent_burst;
    if (!changed && renew) { /* the same strategy again: Envoy extends it, its tokens kept */
        a->tb = b->sent_tb;
        *rate = b->sent_rate;
    }
    return changed || renew;
}

static void add(struct pending *q, struct bucket *b, const struct sl__rlqs_action *a, double rate,
                bool gone)
{
    q->a[q->n] = *a;
    q->b[q->n] = b;
    q->gone[q->n] = gone;
    q->rate[q->n] = rate;
    q->n++;
}

/* After the send (R.mu held): the holds follow what went out. */
static void commit(struct sl__rlqs_stream *rs, struct pending *q, bool ok, int64_t now)
{
    int64_t ttl = ttl_of(rs);

    for (size_t i = 0; i < q->n; i++) {
        struct bucket *b = q->b[i];
        const struct sl__rlqs_action *a = &q->a[i];
        if (q->gone[i] || !ok)
            continue;
        if (b->cls == B_POOL && b->pool != NULL && a->kind == SL__RLQS_TOKEN_BUCKET &&
            sl__rlqs_sent(&b->pool->m[b->idx], q->rate[i], a->tb.max_tokens, now, ttl))
            b->pool->dirty = true;
        b->sent_any = true;
        b->sent_kind = a->kind;
        b->sent_rate = q->rate[i];
        b->sent_tb = a->tb;
        b->sent_burst = a->tb.max_tokens;
        b->sent_ns = now;
    }
}

/* Send q (outside R.mu) and commit it. False: the stream ended. */
static bool send_pending(struct sl__grpc_op *op, struct pending *q, int64_t now)
{
    static _Thread_local uint8_t out[ACTIONS_PER_MSG * (SL_KEY_MAX + 128)];
    struct sl__rlqs_stream *rs = op->u.rlqs;
    size_t len;
    bool ok;

    if (q->n == 0)
        return true;
    len = sl__rlqs_response_encode(q->a, q->n, out, sizeof(out));
    ok = len > 0 && sl__grpc_send(op, out, len);
    pthread_mutex_lock(&R.mu);
    commit(rs, q, ok, now);
    pthread_mutex_unlock(&R.mu);
    for (size_t i = 0; i < q->n; i++) { /* abandoned buckets go now (sent or not) */
        if (!q->gone[i])
            continue;
        pthread_mutex_lock(&R.mu);
        bucket_free(q->b[i], now);
        pthread_mutex_unlock(&R.mu);
    }
    q->n = 0;
    if (!ok) {
        sl__grpc_fail(op, SL__GRPC_RESOURCE_EXHAUSTED, "the client reads no assignments");
        return false;
    }
    return true;
}

/* Raise the hold of what is about to go (R.mu held). */
static void sending(struct sl__rlqs_stream *rs, struct bucket *b, const struct sl__rlqs_action *a,
                    double rate, int64_t now)
{
    if (b->cls == B_POOL && a->kind == SL__RLQS_TOKEN_BUCKET)
        sl__rlqs_sending(&b->pool->m[b->idx], rate, a->tb.max_tokens, now, ttl_of(rs));
}

/* Look at every bucket of the stream: rules or kill switch changed, pools
 * to divide, assignments to send. False: the stream ended. */
static bool flush(struct sl__grpc_op *op)
{
    static _Thread_local struct pending q;
    struct sl__rlqs_stream *rs = op->u.rlqs;
    const sl_rules *now_rules = sl__worker_rules(rs->w);
    enum sl__ks_mode ks = sl__ks_mode(&rs->w->srv->ks, (struct sl_str){rs->domain, rs->domain_len});
    int64_t now = now_ns();
    bool reclassify = now_rules != rs->rules || ks != rs->ks;

    q.n = 0;
    pthread_mutex_lock(&R.mu);
    sweep(now);
    if (reclassify) {
        sl_rules_unref(rs->rules);
        rs->rules = sl_rules_ref((sl_rules *)now_rules);
        rs->ks = ks;
    }
    size_t k = 0;
    while (k < rs->n) {
        struct bucket *b = rs->b[k];
        struct sl__rlqs_action a;
        double rate = 0.0;
        bool gone = false;
        if (reclassify) {
            bool was = b->ruled;
            classify(rs, b, now);
            if (was && !b->ruled) { /* its rule went: abandon it */
                memset(&a, 0, sizeof(a));
                a.entries = b->entries;
                a.n_entries = b->n_entries;
                a.abandon = true;
                leave_pool(b, now);
                rs->b[k] = rs->b[--rs->n]; /* out of the stream; freed once sent */
                gone = true;
            }
        }
        if (!gone) {
            if (b->cls == B_POOL && pool_due(b->pool, now))
                pool_divide(b->pool, now);
            if (!due(rs, b, now, &a, &rate)) {
                k++;
                continue;
            }
            sending(rs, b, &a, rate, now);
            k++;
        }
        add(&q, b, &a, rate, gone);
        if (q.n == ACTIONS_PER_MSG) {
            pthread_mutex_unlock(&R.mu);
            if (!send_pending(op, &q, now))
                return false;
            pthread_mutex_lock(&R.mu);
        }
    }
    pthread_mutex_unlock(&R.mu);
    return send_pending(op, &q, now);
}

/* ------------------------------------------------------------ the streamer */

static void rlqs_end(struct sl__grpc_op *op, enum sl__grpc_status code, const char *why)
{
    sl__grpc_fail(op, code, why); /* (gone frees the state) */
}

/* The stream's first message: its domain, its state. False: refused. */
static bool start(struct sl__grpc_op *op, const struct sl__rlqs_report *r)
{
    const struct sl__grpc_config *cfg = sl__grpc_config(op->g->c);
    struct sl__rlqs_stream *rs;

    if (r->domain.len == 0) {
        rlqs_end(op, SL__GRPC_INVALID_ARGUMENT, "domain: the first message must name one");
        return false;
    }
    if (r->domain.len > SL__KS_DOMAIN_MAX) {
        rlqs_end(op, SL__GRPC_INVALID_ARGUMENT, "domain: longer than 128 bytes");
        return false;
    }
    if (op->g->rlqs_streams >= cfg->rlqs_max_streams_per_connection) {
        pthread_mutex_lock(&R.mu);
        R.refused_streams++;
        pthread_mutex_unlock(&R.mu);
        rlqs_end(op, SL__GRPC_RESOURCE_EXHAUSTED,
                 "grpc.rlqs_max_streams_per_connection reached on this connection");
        return false;
    }
    rs = sl__xzalloc(sizeof(*rs));
    rs->w = op->g->c->w;
    memcpy(rs->domain, r->domain.p, r->domain.len);
    rs->domain_len = r->domain.len;
    rs->max_buckets = cfg->rlqs_max_buckets_per_stream;
    rs->interval_ns = 0;
    rs->rules = sl_rules_ref((sl_rules *)sl__worker_rules(rs->w));
    rs->ks = sl__ks_mode(&rs->w->srv->ks, (struct sl_str){rs->domain, rs->domain_len});
    op->u.rlqs = rs;
    op->g->rlqs_streams++;
    pthread_mutex_lock(&R.mu);
    R.streams++;
    fleet_ensure(rs->w->srv);
    pthread_mutex_unlock(&R.mu);
    sl__grpc_tick(op, true);
    return true;
}

/* Take one report's usages in (R.mu held). False: over the bucket cap. */
static bool take(struct sl__rlqs_stream *rs, const struct sl__rlqs_report *r, int64_t now)
{
    for (size_t i = 0; i < r->n_usages; i++) {
        const struct sl__rlqs_usage *u = &r->usages[i];
        bool fresh;
        struct bucket *b = bucket_of(rs, u, &fresh);
        if (b == NULL)
            return false;
        if (u->elapsed_ns > rs->interval_ns || rs->interval_ns == 0)
            rs->interval_ns = u->elapsed_ns;
        b->elapsed_ns = u->elapsed_ns;
        R.allowed += u->allowed;
        R.denied += u->denied;
        if (fresh)
            classify(rs, b, now);
        double secs = (double)u->elapsed_ns / 1e9;
        /* A bucket's first report comes with its first request, over the
         * moment since: no rate yet (it counts as the floor). */
        double demand = fresh ? 0.0 : ((double)u->allowed + (double)u->denied) / secs;
        if (b->cls == B_POOL) {
            struct pool *p = b->pool;
            p->allowed += u->allowed;
            p->denied += u->denied;
            double was = p->used[b->idx], scale = fmax(fmax(was, demand), p->share.rate * 0.01);
            p->m[b->idx].demand = demand;
            if (fabs(demand - was) > REBALANCE * scale)
                p->dirty = true;
            if (p->shadow && b->sent_any) { /* what the share would have denied */
                double share = p->m[b->idx].next_rate * secs;
                if ((double)u->allowed > share)
                    R.would_deny += (uint64_t)((double)u->allowed - share);
            }
        } else if (b->shadow_ban) {
            R.would_deny += u->allowed; /* a shadow requests_per_unit: 0 */
        }
    }
    return true;
}

static void rlqs_message(struct sl__grpc_op *op, const uint8_t *msg, size_t len)
{
    static _Thread_local struct sl__rlqs_report r;
    const struct sl__grpc_config *cfg = sl__grpc_config(op->g->c);
    int rc;

    if (msg == NULL) { /* the client is done sending: the assignments go on */
        if (op->u.rlqs == NULL)
            rlqs_end(op, SL__GRPC_INVALID_ARGUMENT, "no usage report");
        return;
    }
    rc = sl__rlqs_report_decode(&r, msg, len, cfg->rlqs_max_buckets_per_stream);
    if (rc != SL_OK) {
        char why[sizeof(r.error)];
        memcpy(why, r.error, sizeof(why));
        sl__rlqs_report_release(&r);
        rlqs_end(op,
                 rc == SL_EPARSE    ? SL__GRPC_INTERNAL
                 : rc == SL_ETOOBIG ? SL__GRPC_RESOURCE_EXHAUSTED
                                    : SL__GRPC_INVALID_ARGUMENT,
                 why);
        return;
    }
    if (op->u.rlqs == NULL && !start(op, &r)) {
        sl__rlqs_report_release(&r);
        return;
    }
    struct sl__rlqs_stream *rs = op->u.rlqs;
    if (r.domain.len > 0 &&
        (r.domain.len != rs->domain_len || memcmp(r.domain.p, rs->domain, r.domain.len) != 0)) {
        sl__rlqs_report_release(&r);
        rlqs_end(op, SL__GRPC_INVALID_ARGUMENT,
                 "domain: a stream keeps its first message's domain; open another stream");
        return;
    }
    pthread_mutex_lock(&R.mu);
    bool ok = take(rs, &r, now_ns());
    pthread_mutex_unlock(&R.mu);
    sl__rlqs_report_release(&r);
    if (!ok) {
        rlqs_end(op, SL__GRPC_RESOURCE_EXHAUSTED,
                 "grpc.rlqs_max_buckets_per_stream reached on this stream");
        return;
    }
    flush(op);
}

static void rlqs_tick(struct sl__grpc_op *op)
{
    if (op->u.rlqs != NULL)
        flush(op);
}

static void rlqs_drain(struct sl__grpc_op *op)
{
    sl__grpc_fail(op, SL__GRPC_UNAVAILABLE, "the server is stopping");
}

/* The stream is over (ended, reset, or its connection closed): its
 * members depart, holding their last assignments until their TTLs. */
static void rlqs_gone(struct sl__grpc_op *op)
{
    struct sl__rlqs_stream *rs = op->u.rlqs;
    int64_t now = now_ns();

    if (rs == NULL)
        return;
    op->u.rlqs = NULL;
    op->g->rlqs_streams--;
    pthread_mutex_lock(&R.mu);
    for (size_t k = 0; k < rs->n; k++)
        bucket_free(rs->b[k], now);
    R.streams--;
    pthread_mutex_unlock(&R.mu);
    sl_rules_unref(rs->rules);
    free(rs->b);
    free(rs);
}

const struct sl__grpc_streamer sl__grpc_rlqs = {rlqs_message, rlqs_tick, rlqs_drain, rlqs_gone};

/* ------------------------------------------------------------ metrics */

#define RENDER_POOLS 256
#define STATS_POOLS  32 /* pools listed in GET /v1/stats */

/* The rate assigned over p's members: held, or about to be sent (R.mu held). */
static double assigned_of(const struct pool *p, int64_t now)
{
    double assigned = 0.0;

    for (size_t i = 0; i < p->n; i++) {
        double h = sl__rlqs_held_rate(&p->m[i], now);
        assigned += p->m[i].next_rate > h ? p->m[i].next_rate : h;
    }
    return assigned;
}

static void put_label(struct sl__buf *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            sl__buf_append(out, "\\", 1);
        if (*s == '\n')
            sl__buf_append(out, "\\n", 2);
        else
            sl__buf_append(out, s, 1);
    }
}

/* One series' HELP and TYPE (sl__buf_appendf takes lines of 512 bytes). */
static void head(struct sl__buf *out, const char *name, const char *type, const char *help)
{
    sl__buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void sl__rlqs_render_metrics(const struct sl__server *srv, struct sl__buf *out)
{
    size_t shown = 0;

    (void)srv;
    pthread_mutex_lock(&R.mu);
    head(out, "sluice_rlqs_streams", "gauge", "Rate limit quota (RLQS) streams open.");
    sl__buf_appendf(out, "sluice_rlqs_streams %zu\n", R.streams);
    head(out, "sluice_rlqs_buckets", "gauge", "RLQS buckets the open streams report.");
    sl__buf_appendf(out, "sluice_rlqs_buckets %zu\n", R.buckets);
    head(out, "sluice_rlqs_pools", "gauge", "Rate limit counters divided among RLQS streams.");
    sl__buf_appendf(out, "sluice_rlqs_pools %zu\n", R.pools);
    head(out, "sluice_rlqs_reported_requests_total", "counter",
         "Requests Envoys reported over RLQS, by what they did with them.");
    sl__buf_appendf(out, "sluice_rlqs_reported_requests_total{outcome=\"allowed\"} %" PRIu64 "\n",
                    R.allowed);
    sl__buf_appendf(out, "sluice_rlqs_reported_requests_total{outcome=\"denied\"} %" PRIu64 "\n",
                    R.denied);
    head(out, "sluice_rlqs_shadow_denied_total", "counter",
         "Reported requests that a shadow limit's share would have denied.");
    sl__buf_appendf(out, "sluice_rlqs_shadow_denied_total %" PRIu64 "\n", R.would_deny);
    head(out, "sluice_rlqs_refused_total", "counter",
         "RLQS streams refused (streams_per_connection) and buckets whose rule is no rate "
         "(not_a_rate).");
    sl__buf_appendf(out,
                    "sluice_rlqs_refused_total{reason=\"streams_per_connection\"} %" PRIu64 "\n",
                    R.refused_streams);
    sl__buf_appendf(out, "sluice_rlqs_refused_total{reason=\"not_a_rate\"} %" PRIu64 "\n",
                    R.nonrate);
    head(out, "sluice_rlqs_instances", "gauge",
         "Instances (stream and bucket) a counter is divided among, departed ones still holding "
         "included.");
    head(out, "sluice_rlqs_limit_rate", "gauge", "A divided counter's rate, requests a second.");
    head(out, "sluice_rlqs_assigned_rate", "gauge",
         "The rate assigned over a counter's instances (held, or about to be sent), requests a "
         "second.");
    bool fleet = R.fleet_state == 2;
    if (fleet) {
        head(out, "sluice_rlqs_fleet_rounds_total", "counter",
             "A fleet's rounds: a pool's demand shared through the store (ok), or not (failed).");
        sl__buf_appendf(out, "sluice_rlqs_fleet_rounds_total{outcome=\"ok\"} %" PRIu64 "\n",
                        R.rounds);
        sl__buf_appendf(out, "sluice_rlqs_fleet_rounds_total{outcome=\"failed\"} %" PRIu64 "\n",
                        R.failures);
        head(out, "sluice_rlqs_fleet_instances", "gauge",
             "Instances of the whole fleet a counter was divided among in the last round.");
        head(out, "sluice_rlqs_fleet_nodes", "gauge",
             "Nodes (sluiced) of the fleet that reported a counter in the last round.");
        head(out, "sluice_rlqs_fleet_rate", "gauge",
             "The part of a counter's rate this node divides among its own instances.");
    }
    int64_t now = now_ns();
    for (size_t s = 0; s < POOL_SLOTS && shown < RENDER_POOLS; s++) {
        for (const struct pool *p = R.slot[s]; p != NULL && shown < RENDER_POOLS; p = p->next) {
            double assigned = assigned_of(p, now);
            static const char *const names[] = {"instances",       "limit_rate",  "assigned_rate",
                                                "fleet_instances", "fleet_nodes", "fleet_rate"};
            double v[] = {(double)p->n,          p->share.rate,          assigned,
                          (double)p->fleet_inst, (double)p->fleet_nodes, p->fleet_rate};
            for (size_t k = 0; k < (fleet && p->fleet ? 6u : 3u); k++) {
                sl__buf_appendf(out, "sluice_rlqs_%s{rule=\"", names[k]);
                put_label(out, p->label);
                sl__buf_appendf(out, "\",pool=\"%016" PRIx64 "\"} %.6g\n", p->hash, v[k]);
            }
            shown++;
        }
    }
    pthread_mutex_unlock(&R.mu);
}

/* ------------------------------------------------------------ GET /v1/stats */

/* A rate as a JSON number (never inf or nan). */
static double json_num(double v)
{
    return isfinite(v) ? v : 0.0;
}

void sl__rlqs_render_stats(const struct sl__server *srv, struct sl__buf *out)
{
    size_t shown = 0;
    int64_t now = now_ns();

    (void)srv;
    pthread_mutex_lock(&R.mu);
    bool fleet = R.fleet_state == 2;
    sl__buf_appendf(
        out,
        "\"rlqs\":{\"streams\":%zu,\"buckets\":%zu,\"pools\":%zu,\"allowed\":%" PRIu64
        ",\"denied\":%" PRIu64 ",\"shadow_denied\":%" PRIu64 ",\"fleet\":%s,\"by_pool\":[",
        R.streams, R.buckets, R.pools, R.allowed, R.denied, R.would_deny, fleet ? "true" : "false");
    for (size_t s = 0; s < POOL_SLOTS && shown < STATS_POOLS; s++) {
        for (const struct pool *p = R.slot[s]; p != NULL && shown < STATS_POOLS; p = p->next) {
            sl__buf_append(out, shown == 0 ? "{\"rule\":" : ",{\"rule\":", shown == 0 ? 8 : 9);
            sl__buf_json_str(out, p->label);
            sl__buf_appendf(out,
                            ",\"pool\":\"%016" PRIx64 "\",\"instances\":%zu,\"limit_rate\":%.6g"
                            ",\"assigned_rate\":%.6g,\"allowed\":%" PRIu64 ",\"denied\":%" PRIu64
                            ",\"shadow\":%s",
                            p->hash, p->n, json_num(p->share.rate), json_num(assigned_of(p, now)),
                            p->allowed, p->denied, p->shadow ? "true" : "false");
            if (fleet && p->fleet)
                sl__buf_appendf(out,
                                ",\"fleet_instances\":%zu,\"fleet_nodes\":%zu,\"fleet_rate\":%.6g",
                                p->fleet_inst, p->fleet_nodes, json_num(p->fleet_rate));
            sl__buf_append(out, "}", 1);
            shown++;
        }
    }
    sl__buf_append(out, "]}", 2);
    pthread_mutex_unlock(&R.mu);
}
