/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rlqs_assign.c - the division of a rate limit among the Envoys that
 * report a rate limit quota bucket (server/grpc/rlqs_assign.c): max-min
 * fair shares with a floor, what a departed member holds until its TTL,
 * increases given only out of what no hold takes, the token bucket that
 * carries a share, and - over long random runs of joins, departures,
 * demand changes and sends that arrive late - the invariant: the rates
 * (and bursts) the Envoys may apply at any moment sum to at most the
 * limit's. For fleets: a node's cap over the fleet's instances, raised
 * only out of what the claims leave; with agreeing views the caps sum to
 * at most the limit, with views that disagree to at most the limit plus
 * (nodes - 1) times the room; the published value's parser.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlqs_assign.h"

#define S   INT64_C(1000000000)
#define EPS 1e-6

static const struct sl__rlqs_share share100 = {100.0, 50, 0.05};

static void live(struct sl__rlqs_member *m, double demand)
{
    memset(m, 0, sizeof(*m));
    m->live = true;
    m->demand = demand;
}

/* Send m its next assignment now, as rlqs.c does. */
static void send_now(struct sl__rlqs_member *m, int64_t now, int64_t ttl)
{
    sl__rlqs_sending(m, m->next_rate, m->next_burst, now, ttl);
    sl__rlqs_sent(m, m->next_rate, m->next_burst, now, ttl);
}

static void test_one_member_gets_the_limit(void **state)
{
    struct sl__rlqs_member m[1];

    live(&m[0], 3.0);
    sl__rlqs_divide(&share100, m, 1, 0);
    assert_true(fabs(m[0].next_rate - 100.0) < EPS);
    assert_int_equal(m[0].next_burst, 50);
}

static void test_skewed_demand_is_max_min_fair(void **state)
{
    struct sl__rlqs_share s = {50.0, 50, 0.05};
    struct sl__rlqs_member m[4];

    live(&m[0], 100.0); /* ten times the others */
    for (int i = 1; i < 4; i++)
        live(&m[i], 10.0);
    sl__rlqs_divide(&s, m, 4, 0);
    assert_true(fabs(m[0].next_rate - 20.0) < 1e-3);
    for (int i = 1; i < 4; i++)
        assert_true(fabs(m[i].next_rate - 10.0) < 1e-3);
    /* bursts follow the rates and stay within the limit's */
    assert_true(m[0].next_burst + m[1].next_burst + m[2].next_burst + m[3].next_burst <= 50);
    assert_true(m[0].next_burst > m[1].next_burst);
}

static void test_leftover_is_shared_and_idle_keeps_a_floor(void **state)
{
    struct sl__rlqs_member m[3];

    live(&m[0], 30.0);
    live(&m[1], 10.0);
    live(&m[2], 0.0); /* idle */
    sl__rlqs_divide(&share100, m, 3, 0);
    /* the floor is 5% of an equal share; 100 - 30 - 10 - floor shared out */
    double floor = 0.05 * 100.0 / 3;
    double extra = (100.0 - 30.0 - 10.0 - floor) / 3;
    assert_true(fabs(m[0].next_rate - (30.0 + extra)) < 1e-6);
    assert_true(fabs(m[2].next_rate - (floor + extra)) < 1e-6);

    /* all over the limit: the idle member still keeps its floor */
    live(&m[0], 1000.0);
    live(&m[1], 1000.0);
    live(&m[2], 0.0);
    sl__rlqs_divide(&share100, m, 3, 0);
    assert_true(fabs(m[2].next_rate - floor) < 1e-6);
    assert_true(fabs(m[0].next_rate - m[1].next_rate) < 1e-6);
    assert_true(m[0].next_rate + m[1].next_rate + m[2].next_rate <= 100.0 + EPS);
}

static void test_departed_member_holds_until_its_ttl(void **state)
{
    struct sl__rlqs_member m[2];

    live(&m[0], 50.0);
    live(&m[1], 50.0);
    sl__rlqs_divide(&share100, m, 2, 0);
    send_now(&m[0], 0, 3 * S);
    send_now(&m[1], 0, 3 * S);
    m[1].live = false; /* its stream went */
    sl__rlqs_divide(&share100, m, 2, 1 * S);
    assert_true(m[0].next_rate <= 50.0 + EPS); /* not yet its share */
    sl__rlqs_divide(&share100, m, 2, 3 * S);   /* its TTL passed */
    assert_true(fabs(m[0].next_rate - 100.0) < EPS);
    assert_true(m[1].next_rate == 0.0);
}

static void test_increase_waits_for_the_decrease_to_be_sent(void **state)
{
    struct sl__rlqs_member m[2];

    live(&m[0], 50.0);
    sl__rlqs_divide(&share100, m, 1, 0);
    send_now(&m[0], 0, 10 * S); /* holds all 100 */
    live(&m[1], 50.0);          /* a second Envoy */
    sl__rlqs_divide(&share100, m, 2, 1);
    assert_true(fabs(m[0].next_rate - 50.0) < EPS); /* a decrease: given at once */
    assert_true(m[1].next_rate == 0.0);             /* nothing free until it is sent */
    send_now(&m[0], 2, 10 * S);
    sl__rlqs_divide(&share100, m, 2, 3);
    assert_true(fabs(m[1].next_rate - 50.0) < EPS);
}

static void test_token_bucket_never_exceeds_the_rate(void **state)
{
    static const double rates[] = {0.01, 0.5, 1.0, 1.5, 9.99, 100.0, 1000.7, 123456.0, 5e6};
    static const int64_t bursts[] = {1, 3, 50, 1000, 100000};
    struct sl__rlqs_bucket b;

    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
        for (size_t j = 0; j < sizeof(bursts) / sizeof(bursts[0]); j++) {
            assert_true(sl__rlqs_token_bucket(rates[i], bursts[j], &b));
            assert_true(b.max_tokens == (uint32_t)bursts[j]);
            assert_true(b.tokens_per_fill >= 1 && b.tokens_per_fill <= b.max_tokens);
            assert_true(b.fill_interval_ms >= 1);
            assert_true((double)b.tokens_per_fill * 1000.0 / (double)b.fill_interval_ms <=
                        rates[i] * (1 + 1e-12));
        }
    }
    assert_false(sl__rlqs_token_bucket(0.0, 5, &b));
    assert_false(sl__rlqs_token_bucket(5.0, 0, &b));
}

/* ------------------------------------------------------------ the invariant */

#define N 24

struct envoy {
    bool sent_any;
    double rate; /* what it applies: the last assignment it received */
    int64_t burst;
    int64_t until;
};

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random joins, departures, demand swings, divisions and sends (some
 * members slow to send): at every step what the Envoys apply, and what the
 * holds say, stay within the limit. */
static void test_invariant_over_random_runs(void **state)
{
    const struct sl__rlqs_share s = {500.0, 400, 0.05};
    const int64_t ttl = 3 * S;

    for (int run = 0; run < 200; run++) {
        struct sl__rlqs_member m[N];
        struct envoy e[N];
        size_t n = 0;
        int64_t now = 0;

        memset(m, 0, sizeof(m));
        memset(e, 0, sizeof(e));
        for (int step = 0; step < 400; step++) {
            now += (int64_t)(next() % (S / 2));
            uint64_t r = next() % 100;
            if (r < 10 && n < N) { /* join */
                live(&m[n], (double)(next() % 1000));
                memset(&e[n], 0, sizeof(e[n]));
                n++;
            } else if (r < 15 && n > 0) { /* a stream goes */
                m[next() % n].live = false;
            } else if (r < 40 && n > 0) { /* demand moves, ten-fold at times */
                size_t i = next() % n;
                m[i].demand = (double)(next() % 100) * (next() % 4 == 0 ? 10.0 : 1.0);
            }
            /* departed members past their TTL leave (rlqs.c's pool_expire) */
            for (size_t i = n; i-- > 0;) {
                if (!m[i].live && m[i].hold_until_ns <= now) {
                    m[i] = m[n - 1];
                    e[i] = e[n - 1];
                    n--;
                }
            }
            sl__rlqs_divide(&s, m, n, now);
            /* each live member sends with probability 1/2 (the others' ticks come later) */
            for (size_t i = 0; i < n; i++) {
                if (!m[i].live || !(m[i].next_rate > 0.0) || next() % 2)
                    continue;
                sl__rlqs_sending(&m[i], m[i].next_rate, m[i].next_burst, now, ttl);
                sl__rlqs_sent(&m[i], m[i].next_rate, m[i].next_burst, now, ttl);
                e[i] = (struct envoy){true, m[i].next_rate, m[i].next_burst, now + ttl};
            }
            double applied = 0.0, held = 0.0;
            int64_t applied_b = 0, held_b = 0;
            size_t members = 0;
            for (size_t i = 0; i < n; i++) {
                if (e[i].sent_any && e[i].until > now) {
                    applied += e[i].rate;
                    applied_b += e[i].burst;
                }
                double h = sl__rlqs_held_rate(&m[i], now);
                held += m[i].live && m[i].next_rate > h ? m[i].next_rate : h;
                int64_t hb = sl__rlqs_held_burst(&m[i], now);
                held_b += m[i].live && m[i].next_burst > hb ? m[i].next_burst : hb;
                members++;
            }
            assert_true(applied <= s.rate * (1 + 1e-9));
            assert_true(held <= s.rate * (1 + 1e-9));
            if (members <= (size_t)s.burst) { /* (else each gets one token: the exception) */
                assert_true(applied_b <= s.burst);
                assert_true(held_b <= s.burst);
            }
        }
    }
}

/* With demand steady, shares reach max-min fair within two divisions
 * once every member sends what it is given. */
static void test_shares_follow_demand(void **state)
{
    const struct sl__rlqs_share s = {130.0, 130, 0.05};
    struct sl__rlqs_member m[4];

    live(&m[0], 10.0);
    for (int i = 1; i < 4; i++)
        live(&m[i], 10.0);
    sl__rlqs_divide(&s, m, 4, 0);
    for (int i = 0; i < 4; i++)
        send_now(&m[i], 0, 10 * S);
    m[0].demand = 100.0; /* one Envoy's traffic grows ten-fold */
    for (int round = 0; round < 2; round++) {
        sl__rlqs_divide(&s, m, 4, 1 + round);
        for (int i = 0; i < 4; i++)
            send_now(&m[i], 1 + round, 10 * S);
    }
    assert_true(fabs(m[0].next_rate - 100.0) < 1e-3);
    for (int i = 1; i < 4; i++)
        assert_true(fabs(m[i].next_rate - 10.0) < 1e-3);
}

/* ------------------------------------------------------------ fleets */

static const struct sl__rlqs_share fleet100 = {100.0, 100, 0.05};

static void test_fleet_cap_follows_global_demand(void **state)
{
    const double da[] = {200.0, 20.0}, db[] = {20.0, 20.0};
    struct sl__rlqs_node n[2] = {{0.0, da, 2}, {0.0, db, 2}};

    /* nothing claimed: the fleet's max-min fair targets (40 + 20 | 20 + 20) */
    assert_true(fabs(sl__rlqs_fleet_cap(&fleet100, n, 2, 0) - 60.0) < 1e-6);
    assert_true(fabs(sl__rlqs_fleet_cap(&fleet100, n, 2, 1) - 40.0) < 1e-6);
    /* a has claimed all of it: a lowers at once, b waits for the room */
    n[0].claim = 100.0;
    assert_true(fabs(sl__rlqs_fleet_cap(&fleet100, n, 2, 0) - 60.0) < 1e-6);
    assert_true(sl__rlqs_fleet_cap(&fleet100, n, 2, 1) < 1e-9);
    /* a's lower claim published: b gets the rest */
    n[0].claim = 60.0;
    assert_true(fabs(sl__rlqs_fleet_cap(&fleet100, n, 2, 1) - 40.0) < 1e-6);
    /* out of range */
    assert_true(sl__rlqs_fleet_cap(&fleet100, n, 2, 2) == 0.0);
    (void)state;
}

static void test_fleet_node_without_instances_gets_nothing(void **state)
{
    const double da[] = {5.0};
    struct sl__rlqs_node n[2] = {{0.0, da, 1}, {0.0, NULL, 0}};

    assert_true(fabs(sl__rlqs_fleet_cap(&fleet100, n, 2, 0) - 100.0) < 1e-6);
    assert_true(sl__rlqs_fleet_cap(&fleet100, n, 2, 1) == 0.0);
    (void)state;
}

static double frand(unsigned *seed, double hi)
{
    *seed = *seed * 1103515245u + 12345u;
    return hi * (double)((*seed >> 8) & 0xffff) / 65536.0;
}

/* Random fleets: claims within the limit, then every node's new cap. */
static void test_fleet_caps_bound(void **state)
{
    unsigned seed = 7;
    double d[8][6], dv[8][6];

    for (int run = 0; run < 2000; run++) {
        struct sl__rlqs_node n[8], view[8];
        size_t nn = 2 + (size_t)frand(&seed, 6.0);
        double claims = 0.0, agree = 0.0, differ = 0.0;
        for (size_t j = 0; j < nn; j++) {
            size_t k = (size_t)frand(&seed, 6.0);
            for (size_t i = 0; i < k; i++)
                d[j][i] = frand(&seed, 300.0);
            n[j] = (struct sl__rlqs_node){frand(&seed, 100.0 / (double)nn), d[j], k};
            claims += n[j].claim;
        }
        double room = 100.0 - claims;
        for (size_t self = 0; self < nn; self++) {
            agree += sl__rlqs_fleet_cap(&fleet100, n, nn, self);
            /* this node sees the others' demands as they were a round ago */
            for (size_t j = 0; j < nn; j++) {
                for (size_t i = 0; i < n[j].n; i++)
                    dv[j][i] = j == self ? d[j][i] : frand(&seed, 300.0);
                view[j] = (struct sl__rlqs_node){n[j].claim, dv[j], n[j].n};
            }
            differ += sl__rlqs_fleet_cap(&fleet100, view, nn, self);
        }
        assert_true(agree <= 100.0 + 1e-6);
        assert_true(differ <= 100.0 + (double)(nn - 1) * room + 1e-6);
    }
    (void)state;
}

/* Over random pools of up to a thousand fresh members whose demands
 * exceed the limit: every member short of its demand gets the same share,
 * no member gets more than that share or more than it asked (above the
 * floor), and the shares take the whole limit. */
static void test_water_level_is_max_min_over_random_pools(void **state)
{
    static struct sl__rlqs_member m[1000];
    uint64_t x = 0x9e3779b97f4a7c15u;

    for (int round = 0; round < 200; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = 2 + x % 999;
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            live(&m[i], 1.0 + (double)(x % 100000) / 10.0);
            sum += m[i].demand;
        }
        struct sl__rlqs_share s = {sum / 3.0, INT64_C(1) << 40, 0.0};
        sl__rlqs_divide(&s, m, n, 0);
        double top = 0.0, got = 0.0;
        for (size_t i = 0; i < n; i++) {
            top = m[i].next_rate > top ? m[i].next_rate : top;
            got += m[i].next_rate;
        }
        assert_true(got <= s.rate * (1 + 1e-9));
        assert_true(got >= s.rate * (1 - 1e-6));
        for (size_t i = 0; i < n; i++) {
            assert_true(m[i].next_rate <= m[i].demand * (1 + 1e-9));
            if (m[i].next_rate < m[i].demand * (1 - 1e-6))
                assert_true(fabs(m[i].next_rate - top) <= top * 1e-6);
        }
    }
    (void)state;
}

static void test_fleet_parse(void **state)
{
    double d[4], claim;
    int64_t exp;

    assert_int_equal(sl__rlqs_fleet_parse("1700000000000 42.5 1 2.5 300", &exp, &claim, d, 4), 3);
    assert_true(exp == INT64_C(1700000000000) && claim == 42.5 && d[1] == 2.5 && d[2] == 300.0);
    assert_int_equal(sl__rlqs_fleet_parse("5 0", &exp, &claim, d, 4), 0);
    assert_int_equal(sl__rlqs_fleet_parse("5 1 1 2 3 4 5", &exp, &claim, d, 4), 4); /* capped */
    const char *bad[] = {"", "5", "x 1", "5 -1", "5 1 -2", "5 1 nan", "5 inf", "5 1 2x", "-5 1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sl__rlqs_fleet_parse(bad[i], &exp, &claim, d, 4), -1);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_member_gets_the_limit),
        cmocka_unit_test(test_skewed_demand_is_max_min_fair),
        cmocka_unit_test(test_leftover_is_shared_and_idle_keeps_a_floor),
        cmocka_unit_test(test_departed_member_holds_until_its_ttl),
        cmocka_unit_test(test_increase_waits_for_the_decrease_to_be_sent),
        cmocka_unit_test(test_token_bucket_never_exceeds_the_rate),
        cmocka_unit_test(test_invariant_over_random_runs),
        cmocka_unit_test(test_shares_follow_demand),
        cmocka_unit_test(test_fleet_cap_follows_global_demand),
        cmocka_unit_test(test_fleet_node_without_instances_gets_nothing),
        cmocka_unit_test(test_fleet_caps_bound),
        cmocka_unit_test(test_fleet_parse),
        cmocka_unit_test(test_water_level_is_max_min_over_random_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
