/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * embed.c - a program embedding libsluice as a user would: built against the
 * installed sluice.h and library through pkg-config (tests/package/
 * install_check.sh links it shared and static). It loads rules from YAML,
 * checks requests through the limiter until one is denied, and uses a bare
 * table limit; it prints what it saw and exits 0 only when every answer is
 * the one the rules promise.
 */
#include <sluice.h>
#include <sluice_adaptive.h>
#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "embed: %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static const char rules_yaml[] =
    "domain: api\n"
    "descriptors:\n"
    "  - key: user\n"
    "    limits:\n"
    "      - {algorithm: gcra, requests: 3, period: 1m, burst: 2, name: per-user}\n";

int main(void)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *rules = NULL;
    sl_limiter *lim = NULL;
    struct sl_limiter_config lc;
    int allowed = 0;

    EXPECT(strcmp(SLUICE_VERSION, EXPECTED_VERSION) == 0);
    EXPECT(b != NULL);
    EXPECT(sl_rules_builder_add_yaml(b, rules_yaml, strlen(rules_yaml), "embed.yaml",
                                     SL_SRC_FILE) == SL_OK);
    EXPECT(sl_rules_build(b, &rules) == SL_OK);
    sl_rules_builder_free(b);

    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 1 << 20;
    memcpy(lc.table.secret, "embedding secret", 16);
    EXPECT(sl_limiter_new(&lc, &lim) == SL_OK);

    struct sl_entry entry = {{"user", 4}, {"alice", 5}};
    struct sl_descriptor desc = {&entry, 1, -1, NULL};
    struct sl_request req = {{"api", 3}, &desc, 1, 1, 1700000000 * SL_NS_PER_S};
    struct sl_result res;
    for (int i = 0; i < 5; i++) {
        EXPECT(sl_limiter_check(lim, rules, &req, &res) == SL_OK);
        if (res.verdict == SL_ALLOW)
            allowed++;
        else
            break;
    }
    /* gcra, 3 a minute, burst 2: 3 at once, then a denial saying when to retry. */
    EXPECT(allowed == 3);
    EXPECT(res.verdict == SL_DENY);
    EXPECT(res.statuses[0].limit != NULL && strcmp(res.statuses[0].limit->name, "per-user") == 0);
    EXPECT(res.statuses[0].d.retry_after_ns > 0);
    printf("limiter: %d allowed, then %s (retry after %lld ms)\n", allowed,
           sl_verdict_name(res.verdict),
           (long long)sl_ns_to_ms_ceil(res.statuses[0].d.retry_after_ns));

    struct sl_limit l;
    struct sl_decision d;
    const char *why = NULL;
    sl_limit_init(&l);
    l.algo = SL_ALGO_TOKEN_BUCKET;
    l.requests = 1;
    l.period_ns = SL_NS_PER_S;
    EXPECT(sl_limit_validate(&l, &why) == SL_OK);
    sl_limit_finish(&l);
    sl_table *t = sl_limiter_table(lim);
    EXPECT(sl_table_check(t, "k", 1, &l, req.now_ns, 1, &d) == SL_OK && d.verdict == SL_ALLOW);
    EXPECT(sl_table_check(t, "k", 1, &l, req.now_ns, 1, &d) == SL_OK && d.verdict == SL_DENY);
    printf("table: %s then %s\n", sl_algo_name(l.algo), sl_verdict_name(d.verdict));

    /* An adaptive limit (AIMD, defaults: 20 to 200) and a partition of it. */
    struct sl_adaptive_config ac;
    struct sl_adaptive ad;
    struct sl_adaptive_ticket tk;
    struct sl_partition_config pc;
    struct sl_partition part;
    sl_adaptive_config_init(&ac, SL_ADAPTIVE_AIMD);
    EXPECT(sl_adaptive_init(&ad, &ac, req.now_ns, 1, &why) == SL_OK);
    EXPECT(sl_adaptive_acquire(&ad, req.now_ns, &tk));
    sl_adaptive_release(&ad, &tk, req.now_ns, SL_NS_PER_MS, SL_ADAPTIVE_SUCCESS);
    EXPECT(sl_adaptive_limit(&ad) == 20); /* 1 in flight of 20: no growth */
    sl_partition_config_init(&pc);
    EXPECT(sl_partition_init(&part, &pc, &why) == SL_OK);
    EXPECT(sl_partition_try_acquire(&part, 0, sl_adaptive_limit(&ad)));
    EXPECT(sl_partition_release(&part, 0) == SL_OK);
    printf("adaptive: %s limit %u\n", sl_adaptive_algo_name(ac.algo), sl_adaptive_limit(&ad));

    /* An adaptive_concurrency limit in the table: one slot per lease. */
    struct sl_adaptive_limit al;
    sl_adaptive_limit_init(&al, SL_ADAPTIVE_AIMD);
    al.cfg.initial_limit = al.cfg.min_limit = 1;
    al.limit.lease_ns = SL_NS_PER_S;
    sl_limit_finish(&al.limit);
    EXPECT(sl_limit_validate(&al.limit, &why) == SL_OK);
    EXPECT(sl_table_check(t, "ac", 2, &al.limit, req.now_ns, 1, &d) == SL_OK &&
           d.verdict == SL_ALLOW && d.lease != 0);
    uint64_t lease = d.lease;
    EXPECT(sl_table_check(t, "ac", 2, &al.limit, req.now_ns, 1, &d) == SL_OK &&
           d.verdict == SL_DENY);
    EXPECT(sl_table_release(t, "ac", 2, &al.limit, req.now_ns, lease) == SL_OK);
    EXPECT(sl_limiter_release_latency(lim, "x", 1, req.now_ns, SL_NS_PER_MS) == SL_EINVAL);
    printf("table: %s, one in flight\n", sl_algo_name(al.limit.algo));

    sl_limiter_free(lim);
    sl_rules_unref(rules);
    printf("embed: ok (libsluice %s)\n", SLUICE_VERSION);
    return 0;
}
