/*
 * redis_resolve.c - resolve a request with the rules for the Redis store
 * exactly as sl_limiter_check() (lib/rules/check.c) does before it decides:
 * match every descriptor, drop the limits that another matched limit
 * `replaces` (Envoy), and take out `requests_per_unit: 0` limits (deny-all)
 * - an enforced one outside quota mode denies the whole request, which is
 * then only peeked - and, once decided, report them as that file does.
 *
 * This is a port of lib/rules/check.c's private helpers (apply_replaces,
 * take_deny_all, deny_all_status), kept line for line; it should become a
 * call into lib/rules once those are exported. quota_mode's second decision
 * is redis.c's (it needs a second call).
 */
#include <string.h>

#include "redis_int.h"
#include "rules/rules_int.h"

static bool replaced(const struct sl_limit *l, const struct sl_match *m, size_t n, size_t self)
{
    for (size_t i = 0; i < n; i++) {
        if (i == self)
            continue;
        for (size_t k = 0; k < m[i].n_limits; k++) {
            const struct sl__rlimit *rl = sl__rlimit_of(m[i].limits[k]);
            for (size_t r = 0; r < rl->n_replaces; r++)
                if (l->name != NULL && strcmp(rl->replaces[r], l->name) == 0)
                    return true;
        }
    }
    return false;
}

static void apply_replaces(struct sl_match *m, size_t n)
{
    bool drop[SL_MAX_DESCRIPTORS][SL_MAX_LIMITS] = {{false}};

    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < m[i].n_limits; k++)
            drop[i][k] = replaced(m[i].limits[k], m, n, i);
    for (size_t i = 0; i < n; i++) {
        size_t out = 0;
        for (size_t k = 0; k < m[i].n_limits; k++)
            if (!drop[i][k])
                m[i].limits[out++] = m[i].limits[k];
        m[i].n_limits = out;
    }
}

/* Take deny-all limits out; banned[i] is descriptor i's (an enforced one
 * first). True if the whole request must be denied. */
static bool take_deny_all(struct sl_match *m, size_t n, const struct sl_limit **banned)
{
    bool deny = false;
    size_t quota = 0, quota_banned = 0;

    for (size_t i = 0; i < n; i++) {
        size_t out = 0;
        banned[i] = NULL;
        for (size_t k = 0; k < m[i].n_limits; k++) {
            const struct sl_limit *l = m[i].limits[k];
            if (!sl__rlimit_of(l)->deny_all) {
                m[i].limits[out++] = l;
                continue;
            }
            if (banned[i] == NULL || (banned[i]->shadow && !l->shadow))
                banned[i] = l;
        }
        m[i].n_limits = out;
        bool enforced = banned[i] != NULL && !banned[i]->shadow;
        deny = deny || (enforced && !m[i].quota_mode);
        if (m[i].quota_mode && (out > 0 || banned[i] != NULL)) {
            quota++;
            quota_banned += enforced;
        }
    }
    return deny || (quota > 0 && quota_banned == quota);
}

int sl__redis_resolve(const sl_rules *rules, const struct sl_request *req, struct sl_match *m,
                      const struct sl_limit **banned, bool *deny_all)
{
    if (req->n_descriptors > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < req->n_descriptors; i++) {
        int rc = sl_rules_match(rules, req, i, &m[i]);
        if (rc != SL_OK)
            return rc;
    }
    apply_replaces(m, req->n_descriptors);
    *deny_all = take_deny_all(m, req->n_descriptors, banned);
    return SL_OK;
}

static void deny_all_status(const struct sl_limit *l, int64_t now_ns, struct sl_status *st)
{
    int64_t into = now_ns % l->period_ns;

    memset(st, 0, sizeof(*st));
    st->limit = l;
    st->d.verdict = SL_DENY;
    st->d.reset_ns = l->period_ns - (into < 0 ? into + l->period_ns : into);
    st->d.retry_after_ns = -1;
    if (l->shadow) {
        st->d.verdict = SL_ALLOW;
        st->d.retry_after_ns = 0;
        st->shadow_denied = true;
    }
}

void sl__redis_resolve_finish(const struct sl_limit *const *banned, bool deny_all, int64_t now_ns,
                              struct sl_result *res)
{
    if (deny_all) { /* decided as a peek: report, deny, hold nothing */
        res->verdict = SL_DENY;
        res->delay_ns = 0;
        res->lease[0] = '\0';
    }
    for (size_t i = 0; i < res->n_statuses; i++) {
        if (banned[i] != NULL && (!banned[i]->shadow || res->statuses[i].limit == NULL))
            deny_all_status(banned[i], now_ns, &res->statuses[i]);
        else if (banned[i] != NULL)
            res->statuses[i].shadow_denied = true;
    }
}
