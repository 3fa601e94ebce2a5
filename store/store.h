/*
 * store.h - the asynchronous store interface of sluiced (internal).
 *
 * Every decision the daemon makes goes through a store: a protocol resolves
 * a request against the rules (sl_rules_match) and starts an operation on
 * its worker's store; the store delivers the result to a callback. The
 * memory store (store/memory.c) decides in the library's table and calls
 * back before its start function returns; a remote store (Redis, later)
 * calls back from the worker's event loop when the answer arrives. Protocols
 * are written against this interface only, so a new store changes none of
 * them.
 *
 * It does not resolve rules, format replies or read the clock: the request
 * carries its time (now_ns) and the matches are already resolved.
 *
 * Contract of every start function:
 *  - returns 0: `cb` is called exactly once, possibly before the start
 *    function returns, on the worker loop thread;
 *  - returns a negative SL_E* code: nothing was started, `cb` is never called.
 *  - `req`, `m` and `lease` are borrowed for the duration of the start call
 *    only (a remote store serialises what it needs before returning).
 *  - the result given to `cb` is borrowed for the duration of the callback.
 *
 * Ownership: a store belongs to one worker (one loop thread) and is freed
 * with sl__store_free(); the limiter it is given is shared and outlives it.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct sl__store;

/* err: 0 or a negative SL_E* code (then `res` is NULL). */
typedef void (*sl__store_cb)(void *arg, int err, const struct sl_result *res);

/*
 * What to decide: `req` (its time, cost and descriptors) and either the
 * rules snapshot to resolve it with (`rules` non-NULL: the store applies
 * matching, Envoy `replaces` and `quota_mode` exactly as sl_limiter_check)
 * or, with `rules` NULL, descriptors already resolved into `m[0..n)` (an ad
 * hoc limit such as CL.THROTTLE's). Borrowed for the start call only; an
 * asynchronous store takes its own sl_rules_ref().
 */
struct sl__store_req {
    const struct sl_request *req;
    const sl_rules *rules;
    const struct sl_match *m;
    size_t n;
};

struct sl__store_ops {
    const char *name;
    /* Decide req->hits (0 peeks) on every limit of every descriptor,
     * all-or-nothing (sl_limiter_check / _check_matched semantics). */
    int (*check)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Report the state as a cost-0 check would, consuming nothing. */
    int (*peek)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Forget the state of every limit of every descriptor; the result's
     * statuses are those of the fresh state. */
    int (*reset)(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg);
    /* Release every concurrency slot named by a lease token; `res` is NULL,
     * err SL_ENOENT if nothing was held, SL_EINVAL for a malformed token. */
    int (*release)(struct sl__store *s, const char *lease, size_t len, int64_t now_ns,
                   sl__store_cb cb, void *arg);
    void (*free)(struct sl__store *s);
};

struct sl__store {
    const struct sl__store_ops *ops;
};

/* The memory store over `lim` (borrowed, shared by every worker). */
int sl__store_memory_new(sl_limiter *lim, struct sl__store **out);

static inline void sl__store_free(struct sl__store *s)
{
    if (s != NULL)
        s->ops->free(s);
}

#endif /* SL_STORE_H */
