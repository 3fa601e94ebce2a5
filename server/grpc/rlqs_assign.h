/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs_assign.h - the division of one rate limit among the Envoys that
 * report a rate limit quota bucket (internal; pure: no I/O, no clock, no
 * allocation). rlqs.c keeps the members and sends what this computes.
 *
 * A member is one (stream, bucket) that reports the bucket: its demand
 * (requests a second, allowed and denied, over the report's time_elapsed)
 * and what its Envoy may be applying: the hold, the larger of the last
 * assignment sent and one about to be sent, until that assignment's TTL
 * passes. A member whose stream has gone (a ghost) keeps its hold until
 * its TTL: its Envoy may go on applying its last assignment until then.
 *
 * sl__rlqs_divide() computes each live member's next assignment: targets
 * max-min fair by demand, each demand raised to a floor (floor_frac of an
 * equal share) so an idle instance keeps a little, any rate left once
 * every demand is met shared equally; then capped so that
 *     sum over members of max(hold, next) <= the limit's rate
 * (and the same for bursts in whole tokens, except that with more members
 * than the burst has tokens every live member still gets one, so the sum
 * of max_tokens is the number of members; otherwise a member that can get
 * no token yet gets no rate either). A decrease is given at once; an increase only out of
 * what no hold takes, so capacity a member gives up is handed on only
 * after the smaller assignment was sent (sl__rlqs_sent) or its TTL passed.
 */
#ifndef SL_SERVER_RLQS_ASSIGN_H
#define SL_SERVER_RLQS_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Members one pool divides among at most. */
#define SL__RLQS_MAX_MEMBERS 1024

struct sl__rlqs_member {
    double demand;         /* requests a second, as last reported */
    bool live;             /* its stream is open */
    double hold_rate;      /* what its Envoy may apply until hold_until_ns */
    int64_t hold_burst;    /* likewise, tokens */
    int64_t hold_until_ns; /* 0: nothing held */
    double next_rate;      /* sl__rlqs_divide's result (0: nothing to give yet) */
    int64_t next_burst;    /* likewise; >= 1 when next_rate > 0 */
};

struct sl__rlqs_share {
    double rate;       /* the limit's rate, requests a second (> 0) */
    int64_t burst;     /* the limit's burst, tokens (>= 1) */
    double floor_frac; /* an idle member's demand counts as this part of an equal share */
};

/* What member m holds at now_ns (0 once its TTL passed). */
double sl__rlqs_held_rate(const struct sl__rlqs_member *m, int64_t now_ns);
int64_t sl__rlqs_held_burst(const struct sl__rlqs_member *m, int64_t now_ns);

/* Compute next_rate and next_burst of every live member of m[0..n) (ghosts
 * get 0). */
void sl__rlqs_divide(const struct sl__rlqs_share *s, struct sl__rlqs_member *m, size_t n,
                     int64_t now_ns);

/* Before sending m an assignment of `rate` and `burst` with a TTL of
 * ttl_ns: its hold grows to cover it. */
void sl__rlqs_sending(struct sl__rlqs_member *m, double rate, int64_t burst, int64_t now_ns,
                      int64_t ttl_ns);
/* That assignment was sent: it replaces the hold. True when that gave
 * capacity back (the pool divides again). */
bool sl__rlqs_sent(struct sl__rlqs_member *m, double rate, int64_t burst, int64_t now_ns,
                   int64_t ttl_ns);

/* An Envoy token bucket for `rate` requests a second holding at most
 * `burst`: tokens_per_fill (<= max_tokens) every fill_interval_ms, never
 * more than `rate` on average. False when rate is not > 0. */
struct sl__rlqs_bucket {
    uint32_t max_tokens;
    uint32_t tokens_per_fill;
    int64_t fill_interval_ms;
};
bool sl__rlqs_token_bucket(double rate, int64_t burst, struct sl__rlqs_bucket *out);

/* A fleet (docs/rlqs.md, "Fleets"): several sluiced share a pool's
 * demand through the store. A node, as the others last published it or as
 * it is now: the rate its Envoys may apply (its claim: its cap or what its
 * members hold, the larger) and its live instances' demands. */
struct sl__rlqs_node {
    double claim;
    const double *demand;
    size_t n;
};

/* The rate node `self` of nodes[0..n) may divide among its own instances:
 * the sum of its instances' targets in one max-min fair division (with
 * the floor) over every instance of the fleet, lowered at once, raised
 * only out of what the claims of all nodes leave of the limit (in
 * proportion to what each node lacks, as sl__rlqs_divide does with
 * holds). Instances beyond SL__RLQS_MAX_MEMBERS are left out. */
double sl__rlqs_fleet_cap(const struct sl__rlqs_share *s, const struct sl__rlqs_node *nodes,
                          size_t n, size_t self);

/* A node's published value: "<expiry ms> <claim> <demand>...". Parse:
 * *expiry_ms, *claim and up to cap demands into d[]; the number of demands,
 * or -1 when malformed (a field no node of this version wrote). */
long sl__rlqs_fleet_parse(const char *v, int64_t *expiry_ms, double *claim, double *d, size_t cap);

#endif /* SL_SERVER_RLQS_ASSIGN_H */
