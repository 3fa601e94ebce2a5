/*
 * table.c - the keyed state table: sharded open-addressing index over dense
 * entry arrays, a hard memory cap, expiry of drained entries and CLOCK
 * eviction.
 *
 * Layout, per shard (one spinlock each, nothing shared between shards):
 * - an index of 8-byte slots, linear probing, backward-shift deletion (no
 *   tombstones), doubled while it fits under the shard's share of the cap;
 *   a slot holds the entry number, 34 hash bits (home position and a filter),
 *   a CLOCK reference bit, a pin bit, the out-of-line bit and the algorithm;
 * - dense 40-byte entries in fixed-size chunks: 96-bit fingerprint, the
 *   second from which the state is drained, 24 bytes of state (inline) or a
 *   pointer to an out-of-line block holding a copy of the limit and the
 *   state (sliding_log, concurrency).
 * Keys are not stored: the 96-bit SipHash fingerprint under the embedder's
 * secret stands for them (accidental collision ~2^-96 per pair; crafted ones
 * need the secret).
 *
 * It does not decide anything (lib/algo does) and never reads a clock: every
 * time comes from the caller. Public per-key calls live in table_api.c.
 */
#include <assert.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "table.h"

#define SHARDS_DEFAULT 64u
#define SHARDS_MAX     65536u
#define INDEX_MIN      16u
#define INDEX_MAX      (1u << 25)       /* slots per shard */
#define ENTRIES_MAX    ((1u << 24) - 1) /* entry numbers fit 24 bits */
#define CHUNK_SHIFT_LO 3u
#define CHUNK_SHIFT_HI 9u /* 512 entries = 20 KiB */
/* Slots examined for a drained entry before evicting a live one: each costs
 * a likely cache miss on the entry, and a flood of new keys against a full
 * table pays it per key, so it stays small; the amortised step on every insert
 * keeps sweeping drained entries out meanwhile. */
#define EVICT_SCAN  16u
#define EXPIRE_STEP 2u /* slots examined per insert */

/* Slot bits. */
#define S_IDX        UINT64_C(0xffffff) /* entry number + 1; 0 = empty slot */
#define S_REF        (UINT64_C(1) << 24)
#define S_PIN        (UINT64_C(1) << 25)
#define S_OOL        (UINT64_C(1) << 26)
#define S_ALGO_SHIFT 27
#define S_ALGO       (UINT64_C(7) << S_ALGO_SHIFT)
#define S_HASH_SHIFT 30 /* 34 hash bits: fp.w[0] and 2 bits of fp.w[2] */

struct entry {
    uint32_t fp[3];
    uint32_t whole_at_s; /* Unix seconds (rounded up) from which drained */
    uint64_t st[3];      /* inline state, or st[0] = struct ool * */
};

/* An out-of-line state: a copy of its limit (name dropped), so that a lease
 * can be released from its token alone and a changed limit is noticed. */
struct ool {
    struct sl_limit lim;
    size_t bytes; /* whole allocation, counted in the cap */
    alignas(8) uint64_t state[];
};

struct shard {
    alignas(64) atomic_int lock;
    uint32_t cap;     /* index slots, power of two */
    uint32_t count;   /* entries */
    uint32_t nchunks; /* entry chunks allocated */
    uint32_t clock_hand, expire_hand;
    uint64_t *index;
    struct entry **chunks; /* directory of max_chunks pointers */
    size_t bytes;          /* index + chunks + directory + out-of-line */
    uint64_t evictions, expired, full_denials, probes;
};

struct sl_table {
    struct shard *shards;
    unsigned nshards;
    unsigned chunk_shift;
    uint32_t max_chunks;
    size_t shard_budget; /* bytes per shard */
    size_t fixed_bytes;  /* the shard array itself */
    enum sl_on_full on_full;
    uint8_t secret[16];
};

void sl_table_config_init(struct sl_table_config *c)
{
    memset(c, 0, sizeof(*c));
    c->max_bytes = (size_t)64 << 20;
    c->shards = SHARDS_DEFAULT;
    c->on_full = SL_ON_FULL_EVICT;
}

/* ---------------------------------------------------------------- locks */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Test-and-test-and-set: uncontended it is one atomic exchange; contended it
 * spins on a read, then yields so a preempted holder can run. */
static void shard_lock(struct shard *s)
{
    for (unsigned n = 0;; n++) {
        if (!atomic_load_explicit(&s->lock, memory_order_relaxed) &&
            !atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
            return;
        if (n < 64)
            cpu_relax();
        else
            sched_yield();
    }
}

static void shard_unlock(struct shard *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

/* ------------------------------------------------------------- helpers */

static inline uint64_t fp_hash34(const uint32_t fp[3])
{
    return (uint64_t)fp[0] | ((uint64_t)(fp[2] & 3) << 32);
}

static inline uint32_t slot_home(uint64_t slot, uint32_t mask)
{
    return (uint32_t)(slot >> S_HASH_SHIFT) & mask;
}

static inline struct entry *entry_at(const sl_table *t, const struct shard *s, uint32_t idx)
{
    return &s->chunks[idx >> t->chunk_shift][idx & ((1u << t->chunk_shift) - 1)];
}

static inline size_t chunk_bytes(const sl_table *t)
{
    return sizeof(struct entry) << t->chunk_shift;
}

/* Unix seconds, rounded up, from which the state is drained. */
static uint32_t whole_at_seconds(int64_t whole_at_ns)
{
    if (whole_at_ns <= 0)
        return 0;
    int64_t s = whole_at_ns / SL_NS_PER_S + (whole_at_ns % SL_NS_PER_S != 0);
    return s >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

static bool drained(const struct entry *e, int64_t now_ns)
{
    if (e->whole_at_s == UINT32_MAX)
        return false;
    return now_ns >= (int64_t)e->whole_at_s * SL_NS_PER_S;
}

static void *entry_state(struct entry *e, uint64_t slot)
{
    if (slot & S_OOL) {
        struct ool *o = (struct ool *)(uintptr_t)e->st[0];
        return o->state;
    }
    return e->st;
}

/* --------------------------------------------------------- index basics */

/* Position of `fp` in the index, or -1; *free_pos gets the first empty slot
 * on its probe path (where it would be inserted). */
static int64_t lookup(const sl_table *t, struct shard *s, const uint32_t fp[3], uint32_t *free_pos)
{
    uint32_t mask = s->cap - 1, i = fp[0] & mask;
    uint64_t h = fp_hash34(fp);

    for (;;) {
        uint64_t slot = s->index[i];
        s->probes++;
        if (slot == 0) {
            if (free_pos)
                *free_pos = i;
            return -1;
        }
        if ((slot >> S_HASH_SHIFT) == h) {
            const struct entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
            if (e->fp[1] == fp[1] && e->fp[2] == fp[2] && e->fp[0] == fp[0])
                return i;
        }
        i = (i + 1) & mask;
    }
}

/* Double the index (caller checked the budget). */
static int grow_index(struct shard *s)
{
    uint32_t ncap = s->cap * 2, mask = ncap - 1;
    uint64_t *n = calloc(ncap, sizeof(*n));

    if (n == NULL)
        return SL_ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++) {
        uint64_t slot = s->index[i];
        if (slot == 0)
            continue;
        uint32_t j = slot_home(slot, mask);
        while (n[j] != 0)
            j = (j + 1) & mask;
        n[j] = slot;
    }
    free(s->index);
    s->index = n;
    s->bytes += (size_t)s->cap * sizeof(uint64_t);
    s->cap = ncap;
    s->clock_hand &= mask;
    s->expire_hand &= mask;
    return SL_OK;
}

/* Remove the entry in slot `pos`: free its out-of-line state, close the gap
 * in the index by shifting back, and move the last entry into its place so
 * the entry array stays dense. */
static void remove_at(sl_table *t, struct shard *s, uint32_t pos)
{
    uint32_t mask = s->cap - 1, i = pos, j = pos;
    uint64_t slot = s->index[pos];
    uint32_t idx = (uint32_t)(slot & S_IDX) - 1, last = s->count - 1;
    struct entry *e = entry_at(t, s, idx);

    if (slot & S_OOL) {
        struct ool *o = (struct ool *)(uintptr_t)e->st[0];
        s->bytes -= o->bytes;
        free(o);
    }
    for (;;) {
        j = (j + 1) & mask;
        uint64_t sj = s->index[j];
        if (sj == 0)
            break;
        uint32_t k = slot_home(sj, mask);
        /* The slot at j stays if its home lies cyclically in (i, j]. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        s->index[i] = sj;
        i = j;
    }
    s->index[i] = 0;
    if (idx != last) {
        struct entry *le = entry_at(t, s, last);
        *e = *le;
        uint32_t p = e->fp[0] & mask;
        while ((s->index[p] & S_IDX) != (uint64_t)last + 1)
            p = (p + 1) & mask;
        s->index[p] = (s->index[p] & ~S_IDX) | ((uint64_t)idx + 1);
    }
    s->count--;
}

/* --------------------------------------------------- expiry and eviction */

/* Examine up to `n` slots from the expiry hand; drop drained, unpinned
 * entries. Returns how many were dropped. */
static uint32_t expire_some(sl_table *t, struct shard *s, int64_t now_ns, uint32_t n)
{
    uint32_t mask = s->cap - 1, dropped = 0;

    /* Only advancing counts: a removal shifts the next candidate into p. */
    for (uint32_t k = 0; k < n && s->count > 0;) {
        uint32_t p = s->expire_hand & mask;
        uint64_t slot = s->index[p];
        if (slot != 0 && !(slot & S_PIN) &&
            drained(entry_at(t, s, (uint32_t)(slot & S_IDX) - 1), now_ns)) {
            remove_at(t, s, p); /* p now holds the next candidate */
            dropped++;
            continue;
        }
        s->expire_hand = (p + 1) & mask;
        k++;
    }
    s->expired += dropped;
    return dropped;
}

/* CLOCK: clear reference bits until an unreferenced, unpinned entry comes
 * round, and evict it. False when everything is pinned. */
static bool evict_one(sl_table *t, struct shard *s)
{
    uint32_t mask = s->cap - 1;

    for (uint64_t k = 0; k < 2 * (uint64_t)s->cap + 1; k++) {
        uint32_t p = s->clock_hand;
        uint64_t slot = s->index[p];
        s->clock_hand = (p + 1) & mask;
        if (slot == 0 || (slot & S_PIN))
            continue;
        if (slot & S_REF) {
            s->index[p] = slot & ~S_REF;
            continue;
        }
        remove_at(t, s, p);
        s->evictions++;
        return true;
    }
    return false;
}

/* Bytes the shard would hold with one more entry (plus `extra`), and
 * whether the index would have to double for it. */
static size_t bytes_with_one_more(const sl_table *t, const struct shard *s, size_t extra,
                                  bool *grow)
{
    size_t b = s->bytes + extra;
    uint32_t n = s->count + 1;

    *grow = (uint64_t)n * 4 > (uint64_t)s->cap * 3;
    if (*grow)
        b += (size_t)s->cap * sizeof(uint64_t);
    if (n > (s->nchunks << t->chunk_shift))
        b += chunk_bytes(t);
    return b;
}

/* Make room for one more entry with `extra` out-of-line bytes: drop drained
 * entries, then (policy permitting) evict; then grow the index or add a
 * chunk as needed. */
static int make_room(sl_table *t, struct shard *s, size_t extra, int64_t now_ns)
{
    for (;;) {
        bool grow;
        size_t need = bytes_with_one_more(t, s, extra, &grow);
        bool index_ok = !grow || s->cap < INDEX_MAX;

        if (need <= t->shard_budget && index_ok && s->count < ENTRIES_MAX)
            break;
        if (!grow && s->count == 0)
            return SL_ETOOBIG;
        if (expire_some(t, s, now_ns, s->count < EVICT_SCAN ? s->cap : EVICT_SCAN) > 0)
            continue;
        if (t->on_full == SL_ON_FULL_DENY) {
            s->full_denials++;
            return SL_EFULL;
        }
        if (!evict_one(t, s))
            return SL_EFULL;
    }
    bool grow;
    bytes_with_one_more(t, s, extra, &grow);
    if (grow) {
        int rc = grow_index(s);
        if (rc != SL_OK)
            return rc;
    }
    if (s->count + 1 > (s->nchunks << t->chunk_shift)) {
        struct entry *c = malloc(chunk_bytes(t));
        if (c == NULL)
            return SL_ENOMEM;
        s->chunks[s->nchunks++] = c;
        s->bytes += chunk_bytes(t);
    }
    return SL_OK;
}

/* ------------------------------------------------------------ the table */

static int shard_init(sl_table *t, struct shard *s)
{
    atomic_init(&s->lock, 0);
    s->cap = INDEX_MIN;
    s->index = calloc(s->cap, sizeof(uint64_t));
    s->chunks = calloc(t->max_chunks, sizeof(*s->chunks));
    if (s->index == NULL || s->chunks == NULL)
        return SL_ENOMEM;
    s->bytes = s->cap * sizeof(uint64_t) + t->max_chunks * sizeof(*s->chunks);
    return SL_OK;
}

static void shard_fini(sl_table *t, struct shard *s)
{
    while (s->count > 0)
        remove_at(t, s, (uint32_t)(lookup(t, s, entry_at(t, s, 0)->fp, NULL)));
    for (uint32_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->index);
}

int sl_table_new(const struct sl_table_config *c, sl_table **out)
{
    unsigned n = c->shards ? c->shards : SHARDS_DEFAULT;
    sl_table *t;
    size_t budget;

    *out = NULL;
    if (n > SHARDS_MAX || (n & (n - 1)) != 0)
        return SL_EINVAL;
    if (c->on_full != SL_ON_FULL_EVICT && c->on_full != SL_ON_FULL_DENY)
        return SL_EINVAL;
    if (c->max_bytes < n * sizeof(struct shard))
        return SL_EINVAL;
    budget = (c->max_bytes - n * sizeof(struct shard)) / n;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return SL_ENOMEM;
    /* Chunks small enough that at least eight fit in a shard's share. */
    t->chunk_shift = CHUNK_SHIFT_HI;
    while (t->chunk_shift > CHUNK_SHIFT_LO && (sizeof(struct entry) << t->chunk_shift) * 8 > budget)
        t->chunk_shift--;
    t->max_chunks = (uint32_t)(budget / chunk_bytes(t) + 1);
    t->nshards = n;
    t->shard_budget = budget;
    t->fixed_bytes = n * sizeof(struct shard);
    t->on_full = c->on_full;
    memcpy(t->secret, c->secret, sizeof(t->secret));
    /* The smallest shard: its index, its directory and one chunk. */
    if (INDEX_MIN * sizeof(uint64_t) + t->max_chunks * sizeof(void *) + chunk_bytes(t) > budget) {
        free(t);
        return SL_EINVAL;
    }
    t->shards = aligned_alloc(64, n * sizeof(struct shard));
    if (t->shards == NULL) {
        free(t);
        return SL_ENOMEM;
    }
    memset(t->shards, 0, n * sizeof(struct shard));
    for (unsigned i = 0; i < n; i++) {
        if (shard_init(t, &t->shards[i]) != SL_OK) {
            t->nshards = i + 1;
            sl_table_free(t);
            return SL_ENOMEM;
        }
    }
    *out = t;
    return SL_OK;
}

void sl_table_free(sl_table *t)
{
    if (t == NULL)
        return;
    for (unsigned i = 0; i < t->nshards; i++)
        shard_fini(t, &t->shards[i]);
    free(t->shards);
    free(t);
}

size_t sl_table_sweep(sl_table *t, int64_t now_ns)
{
    size_t total = 0;

    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = &t->shards[i];
        shard_lock(s);
        s->expire_hand = 0;
        total += expire_some(t, s, now_ns, s->cap);
        /* Give back chunks no entry needs any more. */
        uint32_t need = (s->count + (1u << t->chunk_shift) - 1) >> t->chunk_shift;
        while (s->nchunks > need) {
            free(s->chunks[--s->nchunks]);
            s->chunks[s->nchunks] = NULL;
            s->bytes -= chunk_bytes(t);
        }
        shard_unlock(s);
    }
    return total;
}

void sl_table_stats(const sl_table *t, struct sl_table_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->bytes = t->fixed_bytes;
    for (unsigned i = 0; i < t->nshards; i++) {
        /* The lock is the table's own mutable part, even for a reader. */
        struct shard *s = (struct shard *)&t->shards[i];
        shard_lock(s);
        out->entries += s->count;
        out->bytes += s->bytes;
        out->evictions += s->evictions;
        out->expired += s->expired;
        out->full_denials += s->full_denials;
        shard_unlock(s);
    }
}

/* ------------------------------------------------- internal (table.h) */

void sl__table_hash(const sl_table *t, const void *key, size_t len, struct sl__fp *fp)
{
    uint64_t h[2];

    sl_siphash128(t->secret, key, len, h);
    fp->w[0] = (uint32_t)h[0];
    fp->w[1] = (uint32_t)(h[0] >> 32);
    fp->w[2] = (uint32_t)h[1];
}

unsigned sl__table_shard(const sl_table *t, const struct sl__fp *fp)
{
    /* Not the bits that pick the home slot: those would cluster per shard. */
    return fp->w[1] & (t->nshards - 1);
}

void sl__table_lock(sl_table *t, unsigned shard)
{
    shard_lock(&t->shards[shard]);
}

void sl__table_unlock(sl_table *t, unsigned shard)
{
    shard_unlock(&t->shards[shard]);
}

uint64_t sl__table_probes(const sl_table *t)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < t->nshards; i++) {
        struct shard *s = (struct shard *)&t->shards[i];
        shard_lock(s);
        n += s->probes;
        shard_unlock(s);
    }
    return n;
}

/* Does the entry in `slot` hold a state for `l`, whose state is `size`
 * bytes? */
static bool entry_matches(struct entry *e, uint64_t slot, const struct sl_limit *l, size_t size)
{
    bool ool = size > SL__STATE_INLINE;

    if (((slot & S_ALGO) >> S_ALGO_SHIFT) != (uint64_t)l->algo || !!(slot & S_OOL) != ool)
        return false;
    if (ool) {
        const struct ool *o = (const struct ool *)(uintptr_t)e->st[0];
        return o->lim.id == l->id && o->bytes == sizeof(struct ool) + size;
    }
    return true;
}

/* Create the entry of `fp` for `l` (absent, shard locked). */
static int create(sl_table *t, struct shard *s, const uint32_t fp[3], const struct sl_limit *l,
                  int64_t now_ns, unsigned flags, struct sl__ref *ref)
{
    const struct sl__algo_ops *ops = sl__algo_ops(l->algo);
    size_t size = ops->state_size(l);
    bool ool = size > SL__STATE_INLINE;
    size_t extra = ool ? sizeof(struct ool) + size : 0;
    struct ool *o = NULL;
    uint32_t pos = 0; /* set by lookup(): the key is absent */
    int rc;

    if (extra > t->shard_budget)
        return SL_ETOOBIG;
    if (s->count > 0)
        expire_some(t, s, now_ns, EXPIRE_STEP);
    rc = make_room(t, s, extra, now_ns);
    if (rc != SL_OK)
        return rc;
    if (ool) {
        o = malloc(extra);
        if (o == NULL)
            return SL_ENOMEM;
        o->lim = *l;
        o->lim.name = NULL; /* borrowed from a snapshot that may go away */
        o->bytes = extra;
        s->bytes += extra;
    }
    lookup(t, s, fp, &pos);
    uint32_t idx = s->count++;
    struct entry *e = entry_at(t, s, idx);
    memcpy(e->fp, fp, sizeof(e->fp));
    memset(e->st, 0, sizeof(e->st));
    if (ool)
        e->st[0] = (uint64_t)(uintptr_t)o;
    /* Born unreferenced: a key seen once (a scan, a flood of one-off keys)
     * is the first CLOCK candidate; a second use earns the reference bit. */
    uint64_t slot = ((uint64_t)idx + 1) | (ool ? S_OOL : 0) | ((uint64_t)l->algo << S_ALGO_SHIFT) |
                    (fp_hash34(fp) << S_HASH_SHIFT);
    if (flags & SL__GET_PIN)
        slot |= S_PIN;
    s->index[pos] = slot;
    ref->state = ool ? (void *)o->state : (void *)e->st;
    ref->entry = e;
    ref->pos = pos;
    ops->init(ref->state, l, now_ns);
    e->whole_at_s = whole_at_seconds(ops->whole_at(ref->state, l));
    return SL_OK;
}

int sl__table_get(sl_table *t, const struct sl__fp *fp, const struct sl_limit *l, int64_t now_ns,
                  unsigned flags, struct sl__ref *ref)
{
    unsigned si = sl__table_shard(t, fp);
    struct shard *s = &t->shards[si];
    int64_t pos = lookup(t, s, fp->w, NULL);

    ref->shard = si;
    if (pos >= 0) {
        uint64_t slot = s->index[pos];
        struct entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
        if (entry_matches(e, slot, l, sl_algo_state_size(l))) {
            uint64_t marked = slot | S_REF | ((flags & SL__GET_PIN) ? S_PIN : 0);
            if (marked != slot) /* no store when set: keeps lines clean */
                s->index[pos] = marked;
            ref->state = entry_state(e, slot);
            ref->entry = e;
            ref->pos = (uint32_t)pos;
            return SL_OK;
        }
        /* A state of another algorithm or limit under this key: start over. */
        if (!(flags & SL__GET_CREATE))
            return SL_ENOENT;
        if (slot & S_PIN)
            return SL_EINVAL;
        remove_at(t, s, (uint32_t)pos);
    } else if (!(flags & SL__GET_CREATE)) {
        return SL_ENOENT;
    }
    return create(t, s, fp->w, l, now_ns, flags, ref);
}

void sl__table_put(sl_table *t, const struct sl__ref *ref, const struct sl_limit *l, bool unpin)
{
    struct shard *s = &t->shards[ref->shard];
    struct entry *e = ref->entry;

    e->whole_at_s = whole_at_seconds(sl__algo_ops(l->algo)->whole_at(ref->state, l));
    if (unpin)
        s->index[ref->pos] &= ~S_PIN;
}

/* Remove the entry `ref` names (shard locked). */
void sl__table_remove(sl_table *t, const struct sl__ref *ref)
{
    remove_at(t, &t->shards[ref->shard], ref->pos);
}

/* Find `fp` with its shard locked, whatever its limit. */
int sl__table_find(sl_table *t, const struct sl__fp *fp, struct sl__ref *ref)
{
    unsigned si = sl__table_shard(t, fp);
    struct shard *s = &t->shards[si];
    int64_t pos = lookup(t, s, fp->w, NULL);

    if (pos < 0)
        return SL_ENOENT;
    uint64_t slot = s->index[pos];
    struct entry *e = entry_at(t, s, (uint32_t)(slot & S_IDX) - 1);
    ref->shard = si;
    ref->pos = (uint32_t)pos;
    ref->entry = e;
    ref->state = entry_state(e, slot);
    return SL_OK;
}

int sl__table_release_fp(sl_table *t, const struct sl__fp *fp, int64_t now_ns, uint64_t lease)
{
    unsigned si = sl__table_shard(t, fp);
    struct shard *s = &t->shards[si];
    int rc = SL_ENOENT;

    shard_lock(s);
    int64_t pos = lookup(t, s, fp->w, NULL);
    if (pos >= 0 && (s->index[pos] & S_OOL)) {
        struct entry *e = entry_at(t, s, (uint32_t)(s->index[pos] & S_IDX) - 1);
        struct ool *o = (struct ool *)(uintptr_t)e->st[0];
        const struct sl__algo_ops *ops = sl__algo_ops(o->lim.algo);
        if (ops->release != NULL) {
            rc = ops->release(o->state, &o->lim, now_ns, lease);
            e->whole_at_s = whole_at_seconds(ops->whole_at(o->state, &o->lim));
        }
    }
    shard_unlock(s);
    return rc;
}

/*
 * The hot path, here beside the layout so that hashing aside it is one
 * function: hash, lock one shard, find or create, check and commit, note
 * when the state drains, unlock. `l` must be validated (sl_limit_validate).
 * The state is found by key alone: callers that mix limits on one key should
 * put the limit's id into the key, as the limiter does (CONTRACTS C4); an
 * entry of another algorithm, or an out-of-line one of another limit id,
 * starts fresh.
 */
int sl_table_check(sl_table *t, const void *key, size_t key_len, const struct sl_limit *l,
                   int64_t now_ns, uint64_t cost, struct sl_decision *d)
{
    const struct sl__algo_ops *ops;
    struct sl__fp fp;
    struct sl__ref ref;
    struct shard *s;
    int rc;

    if (t == NULL || (key == NULL && key_len > 0) || l == NULL)
        return SL_EINVAL;
    if (key_len > SL_KEY_MAX)
        return SL_ETOOBIG;
    ops = sl__algo_ops(l->algo);
    if (ops == NULL)
        return SL_EINVAL;
    if (cost == 0)
        return sl_table_peek(t, key, key_len, l, now_ns, d);
    sl__table_hash(t, key, key_len, &fp);
    s = &t->shards[sl__table_shard(t, &fp)];
    shard_lock(s);
    rc = sl__table_get(t, &fp, l, now_ns, SL__GET_CREATE, &ref);
    if (rc == SL_OK) {
        ops->check(ref.state, l, now_ns, cost, d);
        if (d->verdict != SL_DENY || l->count_rejected)
            ops->commit(ref.state, l, now_ns, cost, d);
        ((struct entry *)ref.entry)->whole_at_s = whole_at_seconds(ops->whole_at(ref.state, l));
    }
    shard_unlock(s);
    return rc;
}
