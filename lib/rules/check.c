/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
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
 * on_unmatched: deny (a domain's choice): a descriptor that no rule
 * applies to denies the whole request, decided as a peek like a deny-all
 * limit below, so that a client cannot escape its limits by adding or
 * reshaping entries until nothing matches.
 *
 * requests_per_unit: 0 (Envoy: deny everything) never reaches the table:
 * such a limit is taken out of its match; an enforced one outside quota
 * mode denies the whole request (the other limits are only peeked, so
 * nothing is counted), a shadow one is reported as a shadow denial.
 *
 * It allocates nothing and takes no lock; the limiter (lib/limiter.c) owns
 * all-or-nothing and the state table.
 */
#include <string.h>

#include "rules/rules_int.h"

/* Descriptor i brings its own limit (Envoy's override): its match holds a
 * plain sl_limit, not a rule's (no replaces, never deny-all). */
static bool own_limit(const struct sl_request *req, size_t i)
{
    return req->descriptors != NULL && req->descriptors[i].limit != NULL;
}

static bool replaced(const struct sl_limit *l, const struct sl_match *m, size_t n, size_t self,
                     const struct sl_request *req)
{
    for (size_t i = 0; i < n; i++) {
        if (i == self || own_limit(req, i))
            continue;
        for (size_t k = 0; k < m[i].n_limits; k++) {
            const struct sl__rlimit *rl = sl__rlimit_of(m[i].limits[k]);
            for (size_t r = 0; r < rl->n_replaces; r++) {
                if (l->name != NULL && strcmp(rl->replaces[r], l->name) == 0)
                    return true;
            }
        }
    }
    return false;
}

/* Drop the limits that a limit matched on another descriptor replaces.
 * Decided over the original matches first, then applied, so that the order
 * of descriptors does not matter. */
static void apply_replaces(struct sl_match *m, size_t n, const struct sl_request *req)
{
    bool drop[SL_MAX_DESCRIPTORS][SL_MAX_LIMITS] = {{false}};

    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < m[i].n_limits && !own_limit(req, i); k++)
            drop[i][k] = replaced(m[i].limits[k], m, n, i, req);
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

/* The status of a deny-all limit: denied until forever, the window's reset
 * reported as Envoy does. */
static void deny_all_status(const struct sl_limit *l, int64_t now_ns, struct sl_status *st)
{
    int64_t into = now_ns % l->period_ns;

    memset(st, 0, sizeof(*st));
    st->limit = l;
    st->d.verdict = SL_DENY;
    st->d.quota = 0;
    st->d.remaining = 0;
    st->d.reset_ns = l->period_ns - (into < 0 ? into + l->period_ns : into);
    st->d.retry_after_ns = -1;
    if (l->shadow) {
        st->d.verdict = SL_ALLOW;
        st->d.retry_after_ns = 0;
        st->shadow_denied = true;
    }
}

/* Take deny-all limits out of the matches; banned[i] is descriptor i's
 * (an enforced one first). Returns true if the request must be denied. */
/* Inlined: in sl__rules_resolve it is on every rules decision's path. */
static inline __attribute__((always_inline)) bool take_deny_all(struct sl_match *m, size_t n,
                                                                const struct sl_limit **banned,
                                                                const struct sl_request *req)
{
    bool deny = false;
    size_t quota = 0, quota_banned = 0;

    for (size_t i = 0; i < n; i++) {
        size_t out = 0;
        banned[i] = NULL;
        if (own_limit(req, i))
            continue;
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
    /* quota_mode: denied when every quota descriptor is over its limit */
    return deny || (quota > 0 && quota_banned == quota);
}

/* Report every descriptor as it stands (cost 0: nothing counted);
 * sl__rules_finish() then reports the whole request as denied. */
static int peek_denied(sl_limiter *lim, const struct sl_match *m, size_t n,
                       const struct sl_request *req, struct sl_result *res)
{
    struct sl_descriptor d[SL_MAX_DESCRIPTORS];
    struct sl_request peek = *req;

    for (size_t i = 0; i < n; i++) {
        d[i] = req->descriptors[i];
        d[i].hits = 0;
    }
    peek.descriptors = d;
    peek.hits = 0;
    return sl_limiter_check_matched(lim, m, n, &peek, res);
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

/* Does `req`'s domain deny the descriptors no rule applies to? */
static bool denies_unmatched(const sl_rules *rules, const struct sl_request *req)
{
    const struct sl__rdomain *dom = sl__rules_find_domain(rules, req->domain);

    return dom != NULL && dom->unmatched == SL__UNMATCHED_DENY;
}

/* What descriptor i's match m leaves for the report; whether it is an
 * unmatched descriptor that denies the request. */
static inline bool note_match(const struct sl_match *m, size_t i, bool deny_unmatched,
                              struct sl__resolved *rv)
{
    rv->unlimited[i] = m->unlimited;
    rv->detailed[i] = m->detailed_metric != NULL;
    /* before `replaces`: a limit another descriptor replaced still applied */
    rv->unmatched[i] = deny_unmatched && m->n_limits == 0 && !m->unlimited;
    return rv->unmatched[i];
}

int sl__rules_resolve(const sl_rules *rules, const struct sl_request *req, struct sl_match *m,
                      struct sl__resolved *rv)
{
    size_t n = req->n_descriptors;
    bool deny_unmatched = denies_unmatched(rules, req), unmatched = false;

    if (n > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        int rc = sl_rules_match(rules, req, i, &m[i]);
        if (rc != SL_OK)
            return rc;
        unmatched = note_match(&m[i], i, deny_unmatched, rv) || unmatched;
    }
    apply_replaces(m, n, req);
    rv->deny_all = take_deny_all(m, n, rv->banned, req) || unmatched;
    return SL_OK;
}

/* The status of an unmatched descriptor: denied for good, no limit. */
static void unmatched_status(struct sl_status *st)
{
    memset(st, 0, sizeof(*st));
    st->d.verdict = SL_DENY;
    st->d.retry_after_ns = -1;
    st->unmatched = true;
}

void sl__rules_finish(const struct sl__resolved *rv, int64_t now_ns, struct sl_result *res)
{
    if (rv->deny_all) { /* decided as a peek: report, deny, hold nothing */
        res->verdict = SL_DENY;
        res->delay_ns = 0;
        res->lease[0] = '\0';
    }
    for (size_t i = 0; i < res->n_statuses && i < SL_MAX_DESCRIPTORS; i++) {
        const struct sl_limit *b = rv->banned[i];
        if (rv->unmatched[i])
            unmatched_status(&res->statuses[i]);
        else if (b != NULL && (!b->shadow || res->statuses[i].limit == NULL))
            deny_all_status(b, now_ns, &res->statuses[i]);
        else if (b != NULL)
            res->statuses[i].shadow_denied = true;
        res->statuses[i].unlimited = rv->unlimited[i];
        res->statuses[i].detailed = rv->detailed[i];
    }
}

/* Contract: rules_int.h. sl_limiter_check() for a request of one
 * descriptor whose match m0 (sl_rules_match) and the fingerprints of its
 * limits fp[0..nfp) the batch's prefetch made: resolved from there, and
 * decided with the fingerprints while the resolution keeps every limit
 * (a deny-all limit taken out, or a quota recheck, hashes again). */
int sl__limiter_check_prematched(sl_limiter *lim, const sl_rules *rules,
                                 const struct sl_request *req, struct sl_match *m0,
                                 const struct sl__fp *fp, size_t nfp, struct sl_result *res)
{
    struct sl__resolved rv;
    size_t limits = m0->n_limits;
    int rc;

    /* one descriptor: `replaces` names limits of other descriptors only */
    rv.deny_all = note_match(m0, 0, denies_unmatched(rules, req), &rv);
    rv.deny_all = take_deny_all(m0, 1, rv.banned, req) || rv.deny_all;
    if (rv.deny_all) {
        rc = peek_denied(lim, m0, 1, req, res);
    } else {
        rc = sl__limiter_check_hinted(lim, m0, req, res, m0->n_limits == limits ? fp : NULL, nfp);
        if (rc == SL_OK && res->verdict == SL_DENY && quota_excused(m0, 1, res))
            rc = recheck_without_denied_quota(lim, m0, 1, req, res);
    }
    if (rc == SL_OK)
        sl__rules_finish(&rv, req->now_ns, res);
    return rc;
}

int sl_limiter_check(sl_limiter *lim, const sl_rules *rules, const struct sl_request *req,
                     struct sl_result *res)
{
    struct sl_match m[SL_MAX_DESCRIPTORS];
    struct sl__resolved rv;
    size_t n;
    int rc;

    if (lim == NULL || rules == NULL || req == NULL || res == NULL)
        return SL_EINVAL;
    rc = sl__rules_resolve(rules, req, m, &rv);
    if (rc != SL_OK)
        return rc;
    n = req->n_descriptors;
    if (rv.deny_all) {
        rc = peek_denied(lim, m, n, req, res);
    } else {
        rc = sl_limiter_check_matched(lim, m, n, req, res);
        if (rc == SL_OK && res->verdict == SL_DENY && quota_excused(m, n, res))
            rc = recheck_without_denied_quota(lim, m, n, req, res);
    }
    if (rc == SL_OK)
        sl__rules_finish(&rv, req->now_ns, res);
    return rc;
}
