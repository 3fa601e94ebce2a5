/*
 * check.c - sl_limiter_check(): resolve every descriptor of a request with
 * the rules, apply Envoy's `replaces` across the request's descriptors and
 * `quota_mode`, then let the limiter decide all limits at once.
 *
 * quota_mode (as envoyproxy/ratelimit): a request is denied when a normal
 * descriptor is over its limit, or when every quota-mode descriptor is; a
 * request denied only by some of its quota descriptors is decided again
 * without them (they are reported as denied, nothing of theirs consumed).
 *
 * It allocates nothing and takes no lock; the limiter (lib/limiter.c) owns
 * all-or-nothing and the state table.
 */
#include <string.h>

#include "rules/rules_int.h"

static bool replaced(const struct sl_limit *l, const struct sl_match *m, size_t n, size_t self)
{
    for (size_t i = 0; i < n; i++) {
        if (i == self)
            continue;
        for (size_t k = 0; k < m[i].n_limits; k++) {
            const struct sl__rlimit *rl = sl__rlimit_of(m[i].limits[k]);
            for (size_t r = 0; r < rl->n_replaces; r++) {
                if (strcmp(rl->replaces[r], l->name) == 0)
                    return true;
            }
        }
    }
    return false;
}

/* Drop the limits that a limit matched on another descriptor replaces.
 * Decided over the original matches first, then applied, so that the order
 * of descriptors does not matter. */
static void apply_replaces(struct sl_match *m, size_t n)
{
    bool drop[SL_MAX_DESCRIPTORS][SL_MAX_LIMITS] = {{false}};

    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < m[i].n_limits; k++)
            drop[i][k] = replaced(m[i].limits[k], m, n, i);
    }
    for (size_t i = 0; i < n; i++) {
        size_t out = 0;
        for (size_t k = 0; k < m[i].n_limits; k++) {
            if (!drop[i][k])
                m[i].limits[out++] = m[i].limits[k];
        }
        m[i].n_limits = out;
    }
}

/* True when the denial came only from some (not all) quota descriptors. */
static bool quota_excused(const struct sl_match *m, size_t n, const struct sl_result *res)
{
    size_t quota = 0, quota_denied = 0;

    for (size_t i = 0; i < n; i++) {
        bool denied = res->statuses[i].d.verdict == SL_DENY && m[i].n_limits > 0;
        if (m[i].quota_mode && m[i].n_limits > 0) {
            quota++;
            quota_denied += denied;
        } else if (denied) {
            return false;
        }
    }
    return quota_denied > 0 && quota_denied < quota;
}

static int recheck_without_denied_quota(sl_limiter *lim, struct sl_match *m, size_t n,
                                        const struct sl_request *req, struct sl_result *res)
{
    struct sl_status denied[SL_MAX_DESCRIPTORS];
    bool was_denied[SL_MAX_DESCRIPTORS];
    int rc;

    for (size_t i = 0; i < n; i++) {
        was_denied[i] = m[i].quota_mode && res->statuses[i].d.verdict == SL_DENY;
        denied[i] = res->statuses[i];
        if (was_denied[i])
            m[i].n_limits = 0;
    }
    rc = sl_limiter_check_matched(lim, m, n, req, res);
    for (size_t i = 0; rc == SL_OK && i < n; i++) {
        if (was_denied[i])
            res->statuses[i] = denied[i];
    }
    return rc;
}

int sl_limiter_check(sl_limiter *lim, const sl_rules *rules, const struct sl_request *req,
                     struct sl_result *res)
{
    struct sl_match m[SL_MAX_DESCRIPTORS];
    size_t n;
    int rc;

    if (lim == NULL || rules == NULL || req == NULL || res == NULL)
        return SL_EINVAL;
    n = req->n_descriptors;
    if (n > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        rc = sl_rules_match(rules, req, i, &m[i]);
        if (rc != SL_OK)
            return rc;
    }
    apply_replaces(m, n);
    rc = sl_limiter_check_matched(lim, m, n, req, res);
    if (rc == SL_OK && res->verdict == SL_DENY && quota_excused(m, n, res))
        rc = recheck_without_denied_quota(lim, m, n, req, res);
    return rc;
}
