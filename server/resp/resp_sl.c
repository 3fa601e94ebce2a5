/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_sl.c - the decision commands over RESP: CL.THROTTLE (redis-cell's
 * command and exact reply), SL.CHECK / SL.CHECKM / SL.ACQUIRE / SL.PEEK /
 * SL.RESET against the rules, SL.RELEASE, DEL of a CL.THROTTLE key, and
 * SL.DEBUG CLOCK for tests.
 *
 * Every decision goes through the one decision path (core/decide.h): the
 * command parses its arguments, reserves a reply slot with its operation
 * and hands the request over; the callback formats the result into the
 * slot (at once for the memory store). Nothing is allocated per command:
 * the operation lives in the connection's op ring, arguments in
 * thread-local scratch. It does not decide, apply kill switches or count
 * metrics itself.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "cert_entry.h"
#include "clock.h"
#include "conn.h"
#include "decide.h"
#include "resp.h"
#include "resp_write.h"
#include "worker-t.h"

/* ---------------------------------------------------------- arguments */

/* A decimal int64 with an optional '-' and nothing else. */
static int parse_i64(struct sl_str s, int64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    bool neg;

    /* One or two digits, what CL.THROTTLE's parameters nearly always are. */
    if (s.len == 1 || s.len == 2) {
        unsigned d0 = (unsigned)(unsigned char)s.p[0] - '0';
        unsigned d1 = (unsigned)(unsigned char)s.p[s.len - 1] - '0';
        if (d0 <= 9 && d1 <= 9) {
            *out = s.len == 1 ? d0 : d0 * 10 + d1;
            return 0;
        }
    }
    neg = s.len > 0 && s.p[0] == '-';
    i = neg;
    if (s.len == i || s.len - i > 19)
        return -1;
    for (; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s.p[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static _Thread_local struct sl_entry entries[SL_MAX_DESCRIPTORS * SL_MAX_ENTRIES];
static _Thread_local struct sl_descriptor descs[SL_MAX_DESCRIPTORS];
static _Thread_local struct sl_limit override_limit; /* SL.CHECK's LIMIT clause */

/* ------------------------------------------------------------ replies */

/* One status: six elements, then a seventh added later so that the first
 * six keep their positions: 1 when a shadow limit (or the shadow kill
 * switch) would have denied (docs/protocol.md). */
static void status_ints(const struct sl_status *s, int64_t v[5])
{
    v[0] = s->d.quota;
    v[1] = s->d.remaining;
    v[2] = sl_ns_to_ms_ceil(s->d.reset_ns);
    v[3] = sl_ns_to_ms_ceil(s->d.retry_after_ns);
    v[4] = s->shadow_denied;
}

static void w_status(struct sl__buf *b, const struct sl_status *s)
{
    int64_t v[5];

    status_ints(s, v);
    sl__resp_w_array(b, 7);
    sl__resp_w_cstr(b, sl_verdict_name(s->d.verdict));
    if (s->limit && s->limit->name)
        sl__resp_w_cstr(b, s->limit->name);
    else
        sl__resp_w_nil(b);
    sl__resp_w_int_run(b, v, 5);
}

static struct sl_str verdict_str(enum sl_verdict v)
{
    switch (v) {
    case SL_ALLOW:
        return (struct sl_str){"allow", 5};
    case SL_DELAY:
        return (struct sl_str){"delay", 5};
    case SL_DENY:
        return (struct sl_str){"deny", 4};
    }
    return (struct sl_str){sl_verdict_name(v), strlen(sl_verdict_name(v))};
}

/* [verdict, delay_ms, statuses, (lease,) (policy)]: the failure policy
 * that answered is one more element, only when one did (docs/protocol.md):
 * a reply decided with the store's state is what it always was. */
static void w_decision(struct sl__buf *b, const struct sl_result *res, bool lease,
                       const char *policy)
{
    if (res->n_statuses == 1 && !lease && policy == NULL) {
        /* The common answer (one limit, no lease, the store's state),
         * written in one pass: the same bytes as below. */
        const struct sl_status *s = &res->statuses[0];
        int64_t v[5];
        bool named = s->limit && s->limit->name;
        struct sl_str name = {named ? s->limit->name : "", named ? strlen(s->limit->name) : 0};

        status_ints(s, v);
        sl__resp_w_decision1(b, verdict_str(res->verdict),
                             res->verdict == SL_DELAY ? sl_ns_to_ms_ceil(res->delay_ns) : 0,
                             verdict_str(s->d.verdict), name, named, v);
        return;
    }
    sl__resp_w_array(b, (lease ? 4 : 3) + (policy != NULL));
    sl__resp_w_cstr(b, sl_verdict_name(res->verdict));
    sl__resp_w_int(b, res->verdict == SL_DELAY ? sl_ns_to_ms_ceil(res->delay_ns) : 0);
    sl__resp_w_array(b, res->n_statuses);
    for (size_t i = 0; i < res->n_statuses; i++)
        w_status(b, &res->statuses[i]);
    if (lease)
        sl__resp_w_cstr(b, res->lease);
    if (policy != NULL)
        sl__resp_w_cstr(b, policy);
}

int64_t sl__resp_cell_seconds(int64_t ns)
{
    int64_t s = ns / SL_NS_PER_S;

    if (ns > 0 && ns % SL_NS_PER_S >= SL_NS_PER_MS)
        s++;
    return s;
}

/* redis-cell: [limited, limit, remaining, retry_after s (-1 allowed), reset s]. */
static void w_throttle(struct sl__buf *b, const struct sl_result *res)
{
    const struct sl_decision *d = &res->statuses[0].d;
    bool limited = d->verdict == SL_DENY;

    const int64_t v[5] = {
        limited,
        (int64_t)d->quota,
        (int64_t)d->remaining,
        limited && d->retry_after_ns >= 0 ? sl__resp_cell_seconds(d->retry_after_ns) : -1,
        sl__resp_cell_seconds(d->reset_ns),
    };

    sl__resp_w_ints5(b, v);
}

static void w_store_error(struct sl__buf *b, int err)
{
    switch (err) {
    case SL_EFULL:
        sl__resp_w_error(b, "ERR state table full (store.max_bytes); request not decided");
        break;
    case SL_ETOOBIG:
        sl__resp_w_error(b, "ERR request above a cap (descriptors, entries, key length)");
        break;
    default:
        sl__resp_w_error(b, "ERR %s", sl_strerror(err));
    }
}

/* ---------------------------------------------------------- operations */

/* The decision path's callback: format the result into the op's slot. */
static void on_done(struct sl__decide_op *d, int err, const struct sl_result *res)
{
    struct sl__resp_op *op = (struct sl__resp_op *)(void *)d;
    struct sl__buf *b = sl__conn_slot_out(op->c, op->slot);
    bool direct = b != NULL; /* the next reply due: written in place */

    if (!direct) {
        b = &op->c->w->areply;
        b->len = 0;
    }
    if (op->kind == SL__RESP_OP_DEL && err == SL_OK) {
        sl__resp_w_int(b, 1);
    } else if (op->kind == SL__RESP_OP_RELEASE) {
        if (err == SL_OK || err == SL_ENOENT)
            sl__resp_w_int(b, err == SL_OK);
        else
            sl__resp_w_error(b, "ERR malformed lease token");
    } else if (err != SL_OK) {
        w_store_error(b, err);
    } else if (op->kind == SL__RESP_OP_THROTTLE) {
        w_throttle(b, res);
    } else {
        w_decision(b, res, op->kind == SL__RESP_OP_ACQUIRE, sl__decide_policy(d));
    }
    if (direct)
        sl__conn_slot_fill(op->c, op->slot, NULL, 0);
    else
        sl__conn_slot_fill(op->c, op->slot, b->p, b->len);
}

/* Reserve a slot and its op; NULL (with an error written) when the
 * connection has too many operations in flight. */
static struct sl__resp_op *op_new(struct sl__conn *c, enum sl__resp_op_kind kind,
                                  struct sl__buf *out)
{
    int64_t slot;
    struct sl__resp_op *op = sl__conn_op_reserve(c, sizeof(*op), &slot);

    if (op == NULL) {
        sl__resp_w_error(out, "ERR too many requests in flight on this connection");
        return NULL;
    }
    memset(&op->d, 0, sizeof(op->d));
    op->c = c;
    op->slot = slot;
    op->kind = kind;
    return op;
}

/* ---------------------------------------------------------- CL.THROTTLE */

/* The user's key, namespaced so it can never equal a rule's state key. */
static const char cell_prefix[] = "\xff"
                                  "cl.throttle\xff";
static const struct sl_match zero_match;

/* The parameter sets CL.THROTTLE has served since the start, process-wide,
 * for DEL: a key has one state per parameter set (the state's layout
 * follows the parameters), and DEL forgets the key under each of them.
 * Entries are written once, under the lock, before the count that
 * publishes them; they never move (the store may hold a pointer to one
 * while a reset is out). Beyond CELL_SETS sets, later ones are not
 * remembered and DEL does not reach their states (docs/protocol.md). */
#define CELL_SETS (SL_MAX_DESCRIPTORS * SL_MAX_LIMITS)
static struct sl_limit cell_sets[CELL_SETS];
static atomic_size_t cell_n;
static pthread_mutex_t cell_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_set(const struct sl_limit *a, const struct sl_limit *b)
{
    return a->id == b->id && a->burst == b->burst && a->requests == b->requests &&
           a->period_ns == b->period_ns;
}

static void cell_remember(const struct sl_limit *l)
{
    size_t n = atomic_load_explicit(&cell_n, memory_order_acquire);

    for (size_t i = 0; i < n; i++)
        if (same_set(&cell_sets[i], l))
            return;
    if (n >= CELL_SETS)
        return; /* full: no lock per call for a client cycling parameters */
    pthread_mutex_lock(&cell_lock);
    n = atomic_load_explicit(&cell_n, memory_order_relaxed);
    for (size_t i = 0; i < n; i++) {
        if (same_set(&cell_sets[i], l)) {
            pthread_mutex_unlock(&cell_lock);
            return;
        }
    }
    if (n < CELL_SETS) {
        cell_sets[n] = *l;
        atomic_store_explicit(&cell_n, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&cell_lock);
}

/* sl_limit_finish() hashes every parameter; clients repeat the same
 * parameters call after call, so the last identity is kept per thread
 * (and a new one remembered for DEL). */
static void finish_cached(struct sl_limit *l)
{
    static _Thread_local struct sl_limit last;
    static _Thread_local bool have;

    if (have && last.burst == l->burst && last.requests == l->requests &&
        last.period_ns == l->period_ns) {
        l->id = last.id;
        return;
    }
    sl_limit_finish(l);
    cell_remember(l);
    last = *l;
    have = true;
}

/* The match of a CL.THROTTLE key: the prefixed key, no limits yet. */
static void cell_match(struct sl_match *m, struct sl_str key)
{
    /* everything after the key bytes is zero (fields may be added there) */
    memcpy(&m->key_len, &zero_match.key_len, sizeof(*m) - offsetof(struct sl_match, key_len));
    m->n_limits = 0;
    memcpy(m->key, cell_prefix, sizeof(cell_prefix) - 1);
    memcpy(m->key + sizeof(cell_prefix) - 1, key.p, key.len);
    m->key_len = sizeof(cell_prefix) - 1 + key.len;
}

int sl__resp_throttle(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                      struct sl__buf *out)
{
    int64_t v[4] = {0, 0, 0, 1}; /* max_burst, count, period, quantity */
    struct sl_match *m = c->w->matches;
    struct sl_descriptor d = {NULL, 0, -1, NULL};
    struct sl_request req;
    struct sl__resp_op *op;
    struct sl_str key = cmd->argv[1];

    if (cmd->argc != 5 && cmd->argc != 6) {
        sl__resp_w_error(out, "Cell error: Usage: cl.throttle <key> <max_burst> <count per "
                              "period> <period> [<quantity>]");
        return 0;
    }
    for (size_t i = 2; i < cmd->argc; i++) {
        if (parse_i64(cmd->argv[i], &v[i - 2]) != 0) {
            sl__resp_w_error(out, "Cell error: Couldn't parse as integer: %.*s",
                             (int)(cmd->argv[i].len > 64 ? 64 : cmd->argv[i].len), cmd->argv[i].p);
            return 0;
        }
    }
    if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) {
        sl__resp_w_error(out, "ERR max_burst, count, period and quantity must not be negative");
        return 0;
    }
    /* redis-cell's emission interval is period/count in whole nanoseconds;
     * zero (count 0, period 0, or a rate above 1/ns) is refused like it. */
    if (v[1] == 0 || v[2] == 0 || (v[2] <= INT64_MAX / SL_NS_PER_S && v[2] * SL_NS_PER_S < v[1])) {
        sl__resp_w_error(out, "Cell error: Zero rates are not supported");
        return 0;
    }
    if (v[2] > INT64_MAX / SL_NS_PER_S || v[0] == INT64_MAX) {
        sl__resp_w_error(out, "ERR period or max_burst too large");
        return 0;
    }
    if (key.len + sizeof(cell_prefix) - 1 > SL_KEY_MAX) {
        sl__resp_w_error(out, "ERR key longer than %d bytes", (int)(SL_KEY_MAX - 16));
        return 0;
    }
    op = op_new(c, SL__RESP_OP_THROTTLE, out);
    if (op == NULL)
        return 0;
    struct sl__decided now;
    sl_limit_init(&op->limit);
    op->limit.algo = SL_ALGO_GCRA;
    op->limit.burst = v[0];
    op->limit.requests = (uint64_t)v[1];
    op->limit.period_ns = v[2] * SL_NS_PER_S;
    op->limit.name = "cl.throttle";
    op->limit.ad_hoc = true;
    finish_cached(&op->limit);
    cell_match(m, key);
    m->limits[0] = &op->limit;
    m->n_limits = 1;
    memset(&req, 0, sizeof(req));
    req.descriptors = &d;
    req.n_descriptors = 1;
    req.hits = (uint64_t)v[3];
    if (sl__decide_matched(c->w, &op->d, &req, m, 1, on_done, &now))
        on_done(&op->d, now.err, now.res);
    return 0;
}

/* DEL key: the CL.THROTTLE key's state under every parameter set served
 * so far is forgotten, as DEL forgets a redis-cell key (admin only, as
 * SL.RESET: resp.c checks). One key, as the reply cannot say which of
 * several held a state: 1, whether or not one did. */
int sl__resp_del(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                 struct sl__buf *out)
{
    static _Thread_local struct sl_match dm[SL_MAX_DESCRIPTORS];
    static _Thread_local struct sl_descriptor dd[SL_MAX_DESCRIPTORS];
    size_t n = atomic_load_explicit(&cell_n, memory_order_acquire), nm = 0;
    struct sl_str key = cmd->argv[1];
    struct sl_request req;
    struct sl__resp_op *op;
    struct sl__decided now;

    if (cmd->argc != 2) {
        sl__resp_w_error(out, "ERR DEL takes one key here (a CL.THROTTLE key)");
        return 0;
    }
    if (key.len + sizeof(cell_prefix) - 1 > SL_KEY_MAX) {
        sl__resp_w_error(out, "ERR key longer than %d bytes", (int)(SL_KEY_MAX - 16));
        return 0;
    }
    if (n == 0) { /* no CL.THROTTLE yet: no state to forget */
        sl__resp_w_int(out, 0);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (i % SL_MAX_LIMITS == 0)
            cell_match(&dm[nm++], key);
        dm[nm - 1].limits[dm[nm - 1].n_limits++] = &cell_sets[i];
    }
    for (size_t i = 0; i < nm; i++)
        dd[i] = (struct sl_descriptor){NULL, 0, -1, NULL};
    memset(&req, 0, sizeof(req));
    req.descriptors = dd;
    req.n_descriptors = nm;
    op = op_new(c, SL__RESP_OP_DEL, out);
    if (op != NULL && sl__decide_matched_reset(c->w, &op->d, &req, dm, nm, on_done, &now))
        on_done(&op->d, now.err, now.res);
    return 0;
}

/* ------------------------------------------------------------- SL.* */

/* Descriptors from argv[from..): one of key/value pairs, or with `counted`
 * several, each introduced by its number of pairs. 0, or -1 with an error
 * written to `out`. */
static int parse_descriptors(const struct sl__resp_cmd *cmd, size_t from, bool counted,
                             struct sl_request *req, struct sl__buf *out)
{
    size_t i = from, ne = 0, nd = 0;

    while (i < cmd->argc) {
        int64_t pairs = (int64_t)(cmd->argc - i) / 2;
        if (counted && (parse_i64(cmd->argv[i++], &pairs) != 0 || pairs < 1)) {
            sl__resp_w_error(out, "ERR each descriptor starts with its number of key/value "
                                  "pairs (>= 1)");
            return -1;
        }
        if (!counted && (cmd->argc - from) % 2 != 0) {
            sl__resp_w_error(out, "ERR descriptor entries come in key value pairs");
            return -1;
        }
        if (nd == SL_MAX_DESCRIPTORS || pairs > SL_MAX_ENTRIES) {
            sl__resp_w_error(out, "ERR at most %d descriptors of %d entries", SL_MAX_DESCRIPTORS,
                             SL_MAX_ENTRIES);
            return -1;
        }
        if ((size_t)pairs * 2 > cmd->argc - i) {
            sl__resp_w_error(out, "ERR descriptor %zu announces %lld pairs but has fewer", nd + 1,
                             (long long)pairs);
            return -1;
        }
        descs[nd].entries = &entries[ne];
        descs[nd].n_entries = (size_t)pairs;
        descs[nd].hits = -1;
        descs[nd].limit = NULL;
        for (int64_t k = 0; k < pairs; k++, ne++, i += 2) {
            entries[ne].key = cmd->argv[i];
            entries[ne].value = cmd->argv[i + 1];
        }
        nd++;
    }
    req->descriptors = descs;
    req->n_descriptors = nd;
    return 0;
}

/* SL.CHECK domain hits LIMIT requests_per_unit unit key value ...: the one
 * descriptor brings its own limit (Envoy's override: a fixed window of
 * requests_per_unit per SECOND, MINUTE, HOUR, DAY, MONTH or YEAR). Key and
 * value come in pairs, so the clause is told apart by the odd count of
 * arguments after hits. Returns the index the pairs start at, or 0 with an
 * error written. */
static size_t parse_limit_clause(const struct sl__resp_cmd *cmd, size_t at, struct sl__buf *out)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {{"SECOND", SL_NS_PER_S},
                 {"MINUTE", 60 * SL_NS_PER_S},
                 {"HOUR", 3600 * SL_NS_PER_S},
                 {"DAY", 86400 * SL_NS_PER_S},
                 {"MONTH", 30 * 86400 * SL_NS_PER_S},
                 {"YEAR", 365 * 86400 * SL_NS_PER_S}};
    int64_t n;

    if (cmd->argc < at + 5 || !sl__resp_eq(cmd->argv[at], "LIMIT") ||
        parse_i64(cmd->argv[at + 1], &n) != 0 || n < 1 || n > UINT32_MAX) {
        sl__resp_w_error(out, "ERR usage: SL.CHECK domain hits [LIMIT requests_per_unit unit] "
                              "key value [key value ...]");
        return 0;
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        if (sl__resp_eq(cmd->argv[at + 2], units[u].name)) {
            sl_limit_init(&override_limit);
            override_limit.algo = SL_ALGO_FIXED_WINDOW;
            override_limit.requests = (uint64_t)n;
            override_limit.period_ns = units[u].ns;
            sl_limit_finish(&override_limit);
            return at + 3;
        }
    }
    sl__resp_w_error(out, "ERR LIMIT unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR");
    return 0;
}

/* Build the request of an SL.* command: domain at argv[1]; hits at argv[2]
 * when `with_hits`, else `hits`; descriptors after (SL.CHECK: after an
 * optional LIMIT clause). */
static int build_request(struct sl__conn *c, const struct sl__resp_cmd *cmd, bool with_hits,
                         bool counted, uint64_t hits, struct sl_request *req, struct sl__buf *out)
{
    int64_t h = (int64_t)hits;
    size_t at = with_hits ? 3 : 2;
    bool limit = with_hits && !counted && (cmd->argc - at) % 2 == 1 && cmd->argc > at &&
                 sl__resp_eq(cmd->argv[at], "LIMIT");

    memset(req, 0, sizeof(*req));
    req->domain = cmd->argv[1];
    if (with_hits && (parse_i64(cmd->argv[2], &h) != 0 || h < 0)) {
        sl__resp_w_error(out, "ERR hits must be a whole number >= 0");
        return -1;
    }
    req->hits = (uint64_t)h;
    if (limit && (at = parse_limit_clause(cmd, at, out)) == 0)
        return -1;
    if (parse_descriptors(cmd, at, counted, req, out) != 0)
        return -1;
    descs[0].limit = limit ? &override_limit : NULL;
    return 0;
}

static int run_rules(struct sl__conn *c, const struct sl__resp_cmd *cmd, struct sl__buf *out,
                     bool with_hits, bool counted, enum sl__resp_op_kind op_kind,
                     enum sl__decide_kind kind)
{
    struct sl_request req;
    struct sl__resp_op *op;

    if (build_request(c, cmd, with_hits, counted, 1, &req, out) != 0)
        return 0;
    struct sl__decided now;

    op = op_new(c, op_kind, out);
    sl__cert_entries(c, &req); /* client_cert_name: the server's, never the client's */
    if (op != NULL && sl__decide(c->w, &op->d, kind, &req, on_done, &now))
        on_done(&op->d, now.err, now.res);
    return 0;
}

int sl__resp_check(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                   struct sl__buf *out)
{
    return run_rules(c, cmd, out, true, false, SL__RESP_OP_DECIDE, SL__DECIDE_CHECK);
}

int sl__resp_checkm(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                    struct sl__buf *out)
{
    return run_rules(c, cmd, out, true, true, SL__RESP_OP_DECIDE, SL__DECIDE_CHECK);
}

int sl__resp_acquire(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                     struct sl__buf *out)
{
    return run_rules(c, cmd, out, false, false, SL__RESP_OP_ACQUIRE, SL__DECIDE_ACQUIRE);
}

int sl__resp_peek(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    return run_rules(c, cmd, out, false, false, SL__RESP_OP_DECIDE, SL__DECIDE_PEEK);
}

int sl__resp_reset(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                   struct sl__buf *out)
{
    return run_rules(c, cmd, out, false, false, SL__RESP_OP_DECIDE, SL__DECIDE_RESET);
}

/* Most latency SL.RELEASE takes: 10^10 us (about 2.8 hours). */
#define LATENCY_US_MAX INT64_C(10000000000)

/* SL.RELEASE lease [latency_us]: the latency, whole microseconds, is the
 * sample of the token's adaptive_concurrency slots; a bad one releases
 * nothing. */
int sl__resp_release(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                     struct sl__buf *out)
{
    struct sl__resp_op *op;
    struct sl__decided now;
    int64_t us = -1;

    if (cmd->argc > 3) {
        sl__resp_w_error(out, "ERR wrong number of arguments for 'SL.RELEASE' command");
        return 0;
    }
    if (cmd->argc == 3 && (parse_i64(cmd->argv[2], &us) != 0 || us < 0 || us > LATENCY_US_MAX)) {
        sl__resp_w_error(out, "ERR latency_us must be a whole number of microseconds from 0 to "
                              "10000000000");
        return 0;
    }
    op = op_new(c, SL__RESP_OP_RELEASE, out);
    if (op != NULL && sl__decide_release_latency(c->w, &op->d, cmd->argv[1].p, cmd->argv[1].len,
                                                 us < 0 ? -1 : us * 1000, on_done, &now))
        on_done(&op->d, now.err, now.res);
    return 0;
}

/* SL.DEBUG CLOCK GET | SL.DEBUG CLOCK ADVANCE ms - only with --test-clock. */
int sl__resp_debug(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                   struct sl__buf *out)
{
    int64_t ms, now;

    if (cmd->argc < 3 || !sl__resp_eq(cmd->argv[1], "CLOCK")) {
        sl__resp_w_error(out, "ERR usage: SL.DEBUG CLOCK GET | SL.DEBUG CLOCK ADVANCE ms");
        return 0;
    }
    if (!sl__clock_is_test()) {
        sl__resp_w_error(out, "ERR SL.DEBUG CLOCK needs sluiced --test-clock START_MS");
        return 0;
    }
    if (sl__resp_eq(cmd->argv[2], "GET") && cmd->argc == 3) {
        sl__resp_w_int(out, sl__clock_now_ns() / SL_NS_PER_MS);
    } else if (sl__resp_eq(cmd->argv[2], "ADVANCE") && cmd->argc == 4 &&
               parse_i64(cmd->argv[3], &ms) == 0 && sl__clock_advance_ms(ms, &now) == SL_OK) {
        sl__resp_w_int(out, now / SL_NS_PER_MS);
    } else {
        sl__resp_w_error(out, "ERR usage: SL.DEBUG CLOCK ADVANCE ms (ms >= 0)");
    }
    return 0;
}
