/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * limiter.c - one request against all limits of all its descriptors at once
 * (docs/contracts.md §Decisions): all-or-nothing, reported per descriptor and overall, and
 * concurrency leases as one printable, sealed token (lease.h).
 *
 * How: every (descriptor, limit) pair becomes an item whose state key is the
 * matched key bytes followed by the limit's id (so a changed limit starts
 * fresh and an unchanged one keeps its state across reloads, contracts §Rules). The shards
 * of all items are locked in ascending order; every item is found or
 * created and pinned, then checked; only if the request is admitted are the
 * items committed (on a denial only count_rejected limits record it, so a
 * blocked request never eats another limit's quota - the counter pollution of
 * envoyproxy/ratelimit#1060). Then the shards are unlocked.
 *
 * Decisions made here: identical items (same key, same limit) in one request
 * are merged into one check of the summed cost; a shadow limit never denies
 * or delays, and it is committed exactly as an enforced limit would be (so
 * when it would deny it records nothing unless count_rejected), which keeps
 * its reports equal to what enforcing it would show. In a descriptor's
 * status a delaying limit ranks above allowing ones (contracts §Decisions names the denying
 * limit, else the lowest remaining; a delay is what the client must act on,
 * so it is reported, the longest first).
 *
 * It does not match rules (lib/rules resolves descriptors into sl_match) and
 * does not read the clock (req->now_ns).
 */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "lease.h"
#include "rules/rules_int.h"
#include "sluice_int.h"
#include "table.h"
#include "sluice_sat.h"

#define MAX_ITEMS (SL_MAX_DESCRIPTORS * SL_MAX_LIMITS)
struct sl_limiter {
    sl_table *table;
    uint8_t lease_key[16];   /* seals lease tokens (lease.h) */
    sl__commit_fn on_commit; /* sl__limiter_on_commit(); NULL: none */
    void *on_commit_arg;
};

/* One limit of one descriptor in the request being checked. */
struct item {
    struct sl__fp fp;
    const struct sl_limit *l;
    uint64_t cost;
    unsigned shard;
    int primary; /* index of the item that carries the check (itself if first) */
    bool have;   /* ref is valid (entry exists) */
    bool committed;
    const struct sl_match *m; /* the descriptor's match (for on_commit) */
    struct sl__ref ref;
    struct sl_decision d;
};

struct batch {
    struct item it[MAX_ITEMS];
    size_t n;
    unsigned shards[MAX_ITEMS];
    size_t nshards;
    /* The fingerprints of the items, in build order, when a batch's
     * prefetch hashed them already (NULL: hash each). */
    const struct sl__fp *hint;
    size_t nhint;
};

void sl_limiter_config_init(struct sl_limiter_config *c)
{
    sl_table_config_init(&c->table);
}

int sl_limiter_new(const struct sl_limiter_config *c, sl_limiter **out)
{
    sl_limiter *lim;
    int rc;

    *out = NULL;
    lim = calloc(1, sizeof(*lim));
    if (lim == NULL)
        return SL_ENOMEM;
    rc = sl_table_new(&c->table, &lim->table);
    if (rc != SL_OK) {
        free(lim);
        return rc;
    }
    sl__lease_key(c->table.secret, lim->lease_key);
    *out = lim;
    return SL_OK;
}

void sl_limiter_free(sl_limiter *lim)
{
    if (lim == NULL)
        return;
    sl_table_free(lim->table);
    free(lim);
}

sl_table *sl_limiter_table(sl_limiter *lim)
{
    return lim->table;
}

/* ------------------------------------------------------- building items */

static uint64_t descriptor_cost(const struct sl_request *req, size_t i)
{
    if (req->descriptors != NULL && i < req->n_descriptors && req->descriptors[i].hits >= 0)
        return (uint64_t)req->descriptors[i].hits;
    return req->hits;
}

/* Reject what exceeds a cap or makes no sense, before touching any state. */
static int validate(const struct sl_match *m, size_t n, const struct sl_request *req)
{
    size_t leases = 0;

    if (n > SL_MAX_DESCRIPTORS ||
        (req->descriptors != NULL && req->n_descriptors > SL_MAX_DESCRIPTORS))
        return SL_ETOOBIG;
    if (n > 0 && m == NULL)
        return SL_EINVAL;
    for (size_t i = 0; req->descriptors != NULL && i < req->n_descriptors; i++)
        if (req->descriptors[i].n_entries > SL_MAX_ENTRIES)
            return SL_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        if (m[i].n_limits > SL_MAX_LIMITS || m[i].key_len > SL_KEY_MAX)
            return SL_ETOOBIG;
        if (m[i].unlimited)
            continue;
        for (size_t j = 0; j < m[i].n_limits; j++) {
            const struct sl_limit *l = m[i].limits[j];
            if (l == NULL || sl__algo_ops(l->algo) == NULL)
                return SL_EINVAL;
            leases += l->algo == SL_ALGO_CONCURRENCY || l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY;
        }
    }
    return leases > SL_MAX_LEASES ? SL_ETOOBIG : SL_OK;
}

static void add_shard(struct batch *b, unsigned shard)
{
    size_t i = b->nshards;

    for (size_t k = 0; k < b->nshards; k++)
        if (b->shards[k] == shard)
            return;
    /* Insertion sort: the lock order must be ascending to avoid deadlock. */
    while (i > 0 && b->shards[i - 1] > shard) {
        b->shards[i] = b->shards[i - 1];
        i--;
    }
    b->shards[i] = shard;
    b->nshards++;
}

/* The fingerprint of one limit's state: `buf` holds the match key (key_len
 * bytes) and has room for the limit id after it (contracts §Rules). */
static void limit_fp(const sl_table *t, char *buf, size_t key_len, uint64_t id, struct sl__fp *fp)
{
    for (int k = 0; k < 8; k++)
        buf[key_len + k] = (char)(id >> (8 * k));
    sl__table_hash(t, buf, key_len + 8, fp);
}

static void build_items(sl_limiter *lim, const struct sl_match *m, size_t n,
                        const struct sl_request *req, struct batch *b, uint16_t *first,
                        uint16_t *count)
{
    char buf[SL_KEY_MAX + sizeof(uint64_t)];
    size_t total = 0;

    for (size_t i = 0; b->hint != NULL && i < n; i++)
        total += m[i].unlimited ? 0 : m[i].n_limits;
    if (total != b->nhint) /* not the items the prefetch hashed: hash here */
        b->hint = NULL;
    b->n = 0;
    b->nshards = 0;
    for (size_t i = 0; i < n; i++) {
        first[i] = (uint16_t)b->n;
        count[i] = 0;
        if (m[i].unlimited || m[i].n_limits == 0)
            continue;
        if (b->hint == NULL)
            memcpy(buf, m[i].key, m[i].key_len);
        for (size_t j = 0; j < m[i].n_limits; j++) {
            struct item *it = &b->it[b->n];
            memset(it, 0, sizeof(*it));
            if (b->hint != NULL)
                it->fp = b->hint[b->n];
            else
                limit_fp(lim->table, buf, m[i].key_len, m[i].limits[j]->id, &it->fp);
            it->l = m[i].limits[j];
            it->m = &m[i];
            it->cost = descriptor_cost(req, i);
            it->shard = sl__table_shard(lim->table, &it->fp);
            it->primary = (int)b->n;
            for (size_t k = 0; k < b->n; k++) {
                struct item *o = &b->it[k];
                if (o->primary == (int)k && memcmp(&o->fp, &it->fp, sizeof(it->fp)) == 0 &&
                    o->l->id == it->l->id) {
                    it->primary = (int)k;
                    o->cost = sl__sat_addu(o->cost, it->cost);
                    break;
                }
            }
            add_shard(b, it->shard);
            b->n++;
            count[i]++;
        }
    }
}

/* ------------------------------------------------------------ deciding */

/* Find (or create, when it will consume) every primary item's entry and
 * pin it, so that making room for one item never evicts another. Returns
 * the number of entries created (which may have moved earlier ones), or a
 * negative SL_E* code. */
static int acquire_all(sl_limiter *lim, struct batch *b, int64_t now_ns)
{
    int created = 0;

    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (it->primary != (int)i || it->cost == 0)
            continue;
        int rc = sl__table_get(lim->table, &it->fp, it->l, now_ns, SL__GET_CREATE | SL__GET_PIN,
                               &it->ref);
        if (rc != SL_OK)
            return rc;
        it->have = true;
        created += it->ref.created;
    }
    return created;
}

/* With no entry created or removed from here on, take stable refs (those
 * from acquire_all still are when it created nothing) and check every
 * primary item. */
static int check_all(sl_limiter *lim, struct batch *b, int64_t now_ns, bool refs_stable)
{
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        if (it->primary != (int)i)
            continue;
        if (!(refs_stable && it->have))
            it->have = sl__table_get(lim->table, &it->fp, it->l, now_ns, 0, &it->ref) == SL_OK;
        if (it->have)
            sl__algo_ops(it->l->algo)->check(it->ref.state, it->l, now_ns, it->cost, &it->d);
        else if (sl__fresh_check(lim->table, &it->fp, it->l, now_ns, it->cost, &it->d) != SL_OK)
            return SL_ENOMEM;
    }
    return SL_OK;
}

/* Commit per contracts §Decisions; on a denial, report the unchanged state of the limits
 * that are not committed. */
static void commit_all(const sl_limiter *lim, struct batch *b, bool denied, int64_t now_ns)
{
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[i];
        const struct sl__algo_ops *ops = sl__algo_ops(it->l->algo);
        if (it->primary != (int)i || !it->have || it->cost == 0)
            continue;
        bool self_deny = it->d.verdict == SL_DENY;
        bool commit = it->l->count_rejected || (!denied && !self_deny);
        if (commit) {
            ops->commit(it->ref.state, it->l, now_ns, it->cost, &it->d);
            it->committed = true;
            if (lim->on_commit != NULL)
                lim->on_commit(lim->on_commit_arg, it->m, it->l, it->cost, now_ns);
        } else if (denied && !self_deny) {
            ops->check(it->ref.state, it->l, now_ns, 0, &it->d);
        }
    }
}

/* Put back every entry found by check_all and unpin it. */
static void put_all(sl_limiter *lim, struct batch *b, int64_t now_ns)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].primary == (int)i && b->it[i].have)
            sl__table_put(lim->table, &b->it[i].ref, b->it[i].l, now_ns, true);
}

/* After a failure part-way through acquire_all: unpin what was pinned. */
static void unpin_all(sl_limiter *lim, struct batch *b, int64_t now_ns)
{
    for (size_t i = 0; i < b->n; i++) {
        struct sl__ref ref;
        if (b->it[i].primary != (int)i)
            continue;
        if (sl__table_get(lim->table, &b->it[i].fp, b->it[i].l, now_ns, 0, &ref) == SL_OK)
            sl__table_put(lim->table, &ref, b->it[i].l, now_ns, true);
    }
}

/* ----------------------------------------------------------- reporting */

static void report_descriptor(const struct batch *b, size_t first, size_t count,
                              struct sl_status *st)
{
    memset(st, 0, sizeof(*st));
    st->d.verdict = SL_ALLOW;
    for (size_t k = first; k < first + count; k++) {
        const struct item *it = &b->it[k];
        const struct item *p = &b->it[it->primary];
        struct sl_decision d = sl__report_shadow(p->d, p->l, &st->shadow_denied);
        if (st->limit == NULL || sl__report_ranks_above(&d, p->l, &st->d, st->limit)) {
            st->d = d;
            st->limit = it->l;
        }
    }
}

static bool leased(const struct sl_limit *l)
{
    return l->algo == SL_ALGO_CONCURRENCY || l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY;
}

/* The token of every lease taken: one sealed lease per committed
 * concurrency or adaptive_concurrency limit, joined by '.' (lease.h). */
static void write_leases(const sl_limiter *lim, const struct batch *b, char *out)
{
    size_t len = 0;

    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = &b->it[i];
        if (it->primary != (int)i || !it->committed || !leased(it->l) || it->d.verdict == SL_DENY)
            continue;
        if (len > 0)
            out[len++] = '.';
        sl__lease_seal(lim->lease_key, &it->fp, it->d.lease, out + len);
        len += SL__LEASE_HEX;
    }
    out[len] = '\0';
}

static void result_init(struct sl_result *res, size_t n)
{
    res->verdict = SL_ALLOW;
    res->delay_ns = 0;
    res->n_statuses = n;
    res->lease[0] = '\0';
}

static void report(const sl_limiter *lim, const struct batch *b, const uint16_t *first,
                   const uint16_t *count, size_t n, struct sl_result *res)
{
    for (size_t i = 0; i < n; i++) {
        struct sl_status *st = &res->statuses[i];
        report_descriptor(b, first[i], count[i], st);
        if (st->d.verdict > res->verdict)
            res->verdict = st->d.verdict;
        if (st->d.verdict == SL_DELAY && st->d.delay_ns > res->delay_ns)
            res->delay_ns = st->d.delay_ns;
    }
    /* A denial anywhere means nothing was admitted: no delay, no lease. */
    if (res->verdict == SL_DENY)
        res->delay_ns = 0;
    else
        write_leases(lim, b, res->lease);
}

/* Is any enforced (non-shadow) limit denying? */
static bool any_denial(const struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].d.verdict == SL_DENY && !b->it[i].l->shadow && b->it[i].primary == (int)i)
            return true;
    return false;
}

/*
 * Contract: see sluice.h. `m[i]` is descriptor i's match; req supplies the
 * costs (hits, per-descriptor hits) and now_ns. Thread-safe: shards are
 * locked in ascending order for the duration of the decision. Returns SL_OK;
 * SL_ETOOBIG/SL_EINVAL before touching state (res: deny, no statuses); SL_EFULL (a new key refused
 * by on_full deny, or no room), SL_ETOOBIG (a state larger than a shard's share) or SL_ENOMEM with
 * nothing consumed - `res` then says deny.
 */
/* The fingerprints a batch's prefetch computed for one item. */
struct fp_hint {
    const struct sl__fp *fp; /* NULL: none */
    size_t n;
};

static int check_matched(sl_limiter *lim, const struct sl_match *m, size_t n,
                         const struct sl_request *req, struct sl_result *res,
                         const struct fp_hint *hint);

int sl_limiter_check_matched(sl_limiter *lim, const struct sl_match *m, size_t n,
                             const struct sl_request *req, struct sl_result *res)
{
    return check_matched(lim, m, n, req, res, NULL);
}

/* Contract: rules/rules_int.h. */
int sl__limiter_check_hinted(sl_limiter *lim, const struct sl_match *m0,
                             const struct sl_request *req, struct sl_result *res,
                             const struct sl__fp *fp, size_t nfp)
{
    struct fp_hint hint = {fp, nfp};

    return check_matched(lim, m0, 1, req, res, fp != NULL ? &hint : NULL);
}

/* Is the request one descriptor of one lease-free limit, and valid (what
 * validate() asks of it, checked directly)? */
static bool one_item(const struct sl_match *m, size_t n, const struct sl_request *req)
{
    const struct sl_limit *l;

    if (n != 1 || m == NULL || m->unlimited || m->n_limits != 1 || m->key_len > SL_KEY_MAX)
        return false;
    l = m->limits[0];
    if (l == NULL || leased(l) || sl__algo_ops(l->algo) == NULL)
        return false;
    return req->descriptors == NULL || req->n_descriptors == 0 ||
           (req->n_descriptors == 1 && req->descriptors[0].n_entries <= SL_MAX_ENTRIES);
}

/* check_one() with a commit callback: the items' steps for one item. */
static int decide_one(sl_limiter *lim, const struct sl_match *m, const struct sl__fp *fp,
                      int64_t now_ns, uint64_t cost, struct sl_decision *d)
{
    const struct sl_limit *l = m->limits[0];
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    unsigned shard = sl__table_shard(lim->table, fp);
    struct sl__ref ref;
    int rc;

    sl__table_lock(lim->table, shard);
    rc = sl__table_get(lim->table, fp, l, now_ns, SL__GET_CREATE | SL__GET_PIN, &ref);
    if (rc == SL_OK) {
        ops->check(ref.state, l, now_ns, cost, d);
        if (l->count_rejected || d->verdict != SL_DENY) {
            ops->commit(ref.state, l, now_ns, cost, d);
            lim->on_commit(lim->on_commit_arg, m, l, cost, now_ns);
        }
        sl__table_put(lim->table, &ref, l, now_ns, true);
    }
    sl__table_unlock(lim->table, shard);
    return rc;
}

/* The common request, one descriptor of one limit that consumes and takes
 * no lease (CL.THROTTLE, most checks): what the items below amount to for
 * it, without them: one shard locked, the entry found or created, checked,
 * committed unless it denies (or it counts rejected requests), and
 * reported as its descriptor's status. Without a commit callback that is
 * the table's own check (sl__table_check_fp). `fp` is the prefetch's
 * fingerprint, or NULL to hash here. */
static int check_one(sl_limiter *lim, const struct sl_match *m, const struct sl_request *req,
                     uint64_t cost, struct sl_result *res, const struct sl__fp *fp)
{
    const struct sl_limit *l = m->limits[0];
    struct sl_status *st = &res->statuses[0];
    struct sl_decision d;
    struct sl__fp own;
    int rc;

    if (fp == NULL) {
        char buf[SL_KEY_MAX + sizeof(uint64_t)];
        memcpy(buf, m->key, m->key_len);
        limit_fp(lim->table, buf, m->key_len, l->id, &own);
        fp = &own;
    }
    memset(&d, 0, sizeof(d));
    if (lim->on_commit == NULL)
        rc = sl__table_check_fp(lim->table, fp, l, req->now_ns, cost, &d);
    else
        rc = decide_one(lim, m, fp, req->now_ns, cost, &d);
    if (rc != SL_OK) {
        res->verdict = SL_DENY;
        return rc;
    }
    memset(st, 0, sizeof(*st));
    st->d = sl__report_shadow(d, l, &st->shadow_denied);
    st->limit = l;
    if (st->d.verdict > res->verdict)
        res->verdict = st->d.verdict;
    if (st->d.verdict == SL_DELAY && st->d.delay_ns > 0)
        res->delay_ns = st->d.delay_ns;
    return SL_OK;
}

static int check_matched(sl_limiter *lim, const struct sl_match *m, size_t n,
                         const struct sl_request *req, struct sl_result *res,
                         const struct fp_hint *hint)
{
    struct batch batch, *b = &batch;
    uint16_t first[SL_MAX_DESCRIPTORS], count[SL_MAX_DESCRIPTORS];
    int rc;

    if (lim == NULL || req == NULL || res == NULL)
        return SL_EINVAL;
    if (one_item(m, n, req) && (hint == NULL || hint->n == 1)) {
        uint64_t cost = descriptor_cost(req, 0);
        if (cost > 0) {
            result_init(res, 1);
            return check_one(lim, m, req, cost, res, hint != NULL ? hint->fp : NULL);
        }
    }
    rc = validate(m, n, req);
    if (rc != SL_OK) {
        result_init(res, 0);
        res->verdict = SL_DENY; /* callers that ignore rc still deny */
        return rc;
    }
    result_init(res, n);
    /* `batch` (~40 KiB) is on the stack: on the heap it would be an
     * allocation per request. */
    b->hint = hint != NULL ? hint->fp : NULL;
    b->nhint = hint != NULL ? hint->n : 0;
    build_items(lim, m, n, req, b, first, count);
    for (size_t k = 0; k < b->nshards; k++)
        sl__table_lock(lim->table, b->shards[k]);
    rc = acquire_all(lim, b, req->now_ns);
    if (rc >= 0)
        rc = check_all(lim, b, req->now_ns, rc == 0);
    if (rc == SL_OK) {
        commit_all(lim, b, any_denial(b), req->now_ns);
        put_all(lim, b, req->now_ns);
    } else {
        unpin_all(lim, b, req->now_ns);
    }
    for (size_t k = b->nshards; k-- > 0;)
        sl__table_unlock(lim->table, b->shards[k]);
    if (rc != SL_OK) {
        res->verdict = SL_DENY;
        return rc;
    }
    report(lim, b, first, count, n, res);
    return SL_OK;
}

/* ------------------------------------------------------------- batches */

/* Items whose index slots are fetched together before they are decided:
 * enough misses in flight to cover the memory latency, few enough that the
 * lines are still cached when their check comes. */
#define BATCH_GROUP 8u

/* Fingerprints kept from the slot prefetch of a group for its entry
 * prefetch: the common one or two limits per item, not every one. */
#define BATCH_FPS (2u * BATCH_GROUP)

struct batch_fps {
    struct sl__fp fp[BATCH_FPS];
    size_t n;
    bool dropped; /* a fingerprint found no room */
};

/* Start loading the home index slot of every limit of match m, keeping
 * the fingerprints while there is room. */
static void prefetch_match(sl_limiter *lim, const struct sl_match *m, struct batch_fps *kept)
{
    char buf[SL_KEY_MAX + sizeof(uint64_t)];

    if (m->unlimited || m->key_len > SL_KEY_MAX || m->n_limits > SL_MAX_LIMITS)
        return;
    memcpy(buf, m->key, m->key_len);
    for (size_t j = 0; j < m->n_limits; j++) {
        struct sl__fp fp;
        if (m->limits[j] == NULL)
            continue;
        limit_fp(lim->table, buf, m->key_len, m->limits[j]->id, &fp);
        (void)sl__table_prefetch_slot(lim->table, &fp);
        if (kept->n < BATCH_FPS)
            kept->fp[kept->n++] = fp;
        else
            kept->dropped = true;
    }
}

/* A hint only: an item that will fail, or whose rules resolve it otherwise
 * (replaces, quota mode), at worst loads a line it does not use. */
static void prefetch_matches(sl_limiter *lim, const struct sl_limiter_item *it,
                             struct batch_fps *kept)
{
    if (it->req == NULL)
        return;
    for (size_t i = 0; it->m != NULL && i < it->n && i < SL_MAX_DESCRIPTORS; i++)
        prefetch_match(lim, &it->m[i], kept);
}

/* The same for a rules item. The match of one of one descriptor is made
 * into *one and kept for its check (returned); any other is matched again
 * when checked. Not inlined: the loop over the items of matches
 * (CL.THROTTLE) stays as small as it was without it. */
static __attribute__((noinline)) const struct sl_match *
prefetch_rules(sl_limiter *lim, const struct sl_limiter_item *it, struct batch_fps *kept,
               struct sl_match *one)
{
    const struct sl_request *req = it->req;
    struct sl_match m;

    if (req == NULL || req->descriptors == NULL)
        return NULL;
    if (req->n_descriptors == 1) {
        if (sl_rules_match(it->rules, req, 0, one) != SL_OK)
            return NULL; /* its check reports the error */
        prefetch_match(lim, one, kept);
        return one;
    }
    for (size_t i = 0; i < req->n_descriptors && i < SL_MAX_DESCRIPTORS; i++)
        if (sl_rules_match(it->rules, req, i, &m) == SL_OK)
            prefetch_match(lim, &m, kept);
    return NULL;
}

/* Contract: see sluice.h. The decisions are the single calls, in order;
 * only the prefetch before each group is added, and only in a table larger
 * than the caches (in one that fits, hashing every key twice costs more
 * than the misses it would hide): the group's index slots first, then,
 * once they have had time to arrive, the entries they name (as
 * sl_table_check_batch does), so that a check waits for neither. An item
 * whose fingerprints the prefetch kept all is checked with them rather
 * than hashing its keys again, and a rules item of one descriptor with the
 * match the prefetch made rather than matching it again. */
int sl_limiter_check_batch(sl_limiter *lim, struct sl_limiter_item *items, size_t n)
{
    struct batch_fps kept;
    struct fp_hint hint[BATCH_GROUP];
    struct sl_match one[BATCH_GROUP];         /* the rules items' matches */
    const struct sl_match *made[BATCH_GROUP]; /* read for rules items only */
    bool large;

    if (lim == NULL || (items == NULL && n > 0))
        return SL_EINVAL;
    large = sl__table_large(lim->table);
    for (size_t g = 0; g < n; g += BATCH_GROUP) {
        size_t end = n - g < BATCH_GROUP ? n : g + BATCH_GROUP;
        if (!large || end - g == 1) { /* one check alone overlaps nothing */
            for (size_t i = g; i < end; i++) {
                struct sl_limiter_item *it = &items[i];
                if (it->res == NULL)
                    it->rc = SL_EINVAL;
                else if (it->rules != NULL)
                    it->rc = sl_limiter_check(lim, it->rules, it->req, it->res);
                else
                    it->rc = check_matched(lim, it->m, it->n, it->req, it->res, NULL);
            }
            continue;
        }
        kept.n = 0;
        for (size_t i = g; i < end; i++) {
            size_t from = kept.n;

            hint[i - g].fp = NULL;
            kept.dropped = false;
            if (items[i].rules == NULL)
                prefetch_matches(lim, &items[i], &kept);
            else if ((made[i - g] = prefetch_rules(lim, &items[i], &kept, &one[i - g])) == NULL)
                continue;
            if (!kept.dropped)
                hint[i - g] = (struct fp_hint){&kept.fp[from], kept.n - from};
        }
        for (size_t i = 0; i < kept.n; i++)
            sl__table_prefetch_entry(lim->table, &kept.fp[i]);
        for (size_t i = g; i < end; i++) {
            struct sl_limiter_item *it = &items[i];
            const struct fp_hint *h = &hint[i - g];
            if (it->res == NULL)
                it->rc = SL_EINVAL;
            else if (it->rules == NULL)
                it->rc =
                    check_matched(lim, it->m, it->n, it->req, it->res, h->fp != NULL ? h : NULL);
            else if (made[i - g] != NULL)
                it->rc = sl__limiter_check_prematched(lim, it->rules, it->req, &one[i - g], h->fp,
                                                      h->n, it->res);
            else
                it->rc = sl_limiter_check(lim, it->rules, it->req, it->res);
        }
    }
    return SL_OK;
}

/* Contract: see sluice.h. Each limit's key is found as check_matched
 * builds it (match key + limit id). */
int sl_limiter_reset(sl_limiter *lim, const struct sl_match *m, size_t n)
{
    char buf[SL_KEY_MAX + sizeof(uint64_t)];
    int removed = 0;

    if (lim == NULL || (n > 0 && m == NULL))
        return SL_EINVAL;
    if (n > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        if (m[i].key_len > SL_KEY_MAX || m[i].n_limits > SL_MAX_LIMITS)
            return SL_ETOOBIG;
        memcpy(buf, m[i].key, m[i].key_len);
        for (size_t j = 0; j < m[i].n_limits; j++) {
            struct sl__fp fp;
            struct sl__ref ref;
            if (m[i].limits[j] == NULL)
                return SL_EINVAL;
            limit_fp(lim->table, buf, m[i].key_len, m[i].limits[j]->id, &fp);
            unsigned shard = sl__table_shard(lim->table, &fp);
            sl__table_lock(lim->table, shard);
            if (sl__table_find(lim->table, &fp, &ref) == SL_OK) {
                sl__table_remove(lim->table, &ref);
                removed++;
            }
            sl__table_unlock(lim->table, shard);
        }
    }
    return removed > 0 ? SL_OK : SL_ENOENT;
}

/* ------------------------------------------------------- other nodes */

void sl__limiter_on_commit(sl_limiter *lim, sl__commit_fn fn, void *arg)
{
    lim->on_commit = fn;
    lim->on_commit_arg = arg;
}

/* Contract: sluice_int.h. The state is found as check_matched builds its
 * key; the amount is committed as a count_rejected limit records a
 * rejected request: whatever the limit says. */
int sl__limiter_absorb(sl_limiter *lim, const char *key, size_t key_len, const struct sl_limit *l,
                       int64_t now_ns, uint64_t amount)
{
    char buf[SL_KEY_MAX + sizeof(uint64_t)];
    struct sl__fp fp;
    struct sl__ref ref;
    struct sl_decision d;
    unsigned shard;
    int rc;

    if (lim == NULL || l == NULL || key_len > SL_KEY_MAX || sl__algo_ops(l->algo) == NULL)
        return SL_EINVAL;
    if (l->algo == SL_ALGO_SLIDING_LOG || l->algo == SL_ALGO_CONCURRENCY ||
        l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY)
        return SL_EINVAL; /* their state is not an amount */
    if (amount == 0)
        return SL_OK;
    memcpy(buf, key, key_len);
    limit_fp(lim->table, buf, key_len, l->id, &fp);
    shard = sl__table_shard(lim->table, &fp);
    sl__table_lock(lim->table, shard);
    rc = sl__table_get(lim->table, &fp, l, now_ns, SL__GET_CREATE, &ref);
    if (rc == SL_OK) {
        const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
        struct sl_limit counted = *l;
        counted.count_rejected = true; /* recorded whatever it decides */
        ops->check(ref.state, &counted, now_ns, amount, &d);
        ops->commit(ref.state, &counted, now_ns, amount, &d);
        sl__table_put(lim->table, &ref, l, now_ns, false);
    }
    sl__table_unlock(lim->table, shard);
    return rc;
}

/* ------------------------------------------------------------- leases */

/* Contract: see sluice.h. The token alone names each slot (64 bits of the
 * entry's fingerprint and the lease id, sealed); the limit comes from the
 * copy stored with the state. */
int sl_limiter_release(sl_limiter *lim, const char *lease, size_t len, int64_t now_ns)
{
    return sl_limiter_release_latency(lim, lease, len, now_ns, -1);
}

/* Contract: see sluice.h. */
int sl_limiter_release_latency(sl_limiter *lim, const char *lease, size_t len, int64_t now_ns,
                               int64_t latency_ns)
{
    struct sl__fp fps[SL_MAX_LEASES];
    uint64_t ids[SL_MAX_LEASES];
    size_t n;
    int released = 0;

    if (lim == NULL || sl__lease_parse(lim->lease_key, lease, len, fps, ids, &n) != SL_OK)
        return SL_EINVAL;
    for (size_t i = 0; i < n; i++)
        released += sl__table_release_fp(lim->table, &fps[i], now_ns, ids[i], latency_ns) == SL_OK;
    return released > 0 ? SL_OK : SL_ENOENT;
}
