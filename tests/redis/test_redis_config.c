/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_config.c - the Redis store's configuration keys
 * (store/redis/redis_config.c): every key sets its field, bad values are refused
 * with a sentence saying what to fix, unknown keys are left to the caller
 * (SL_ENOENT), per-domain policies accumulate up to their cap; address
 * lists with IPv6 hosts (bracketed or bare), Sentinel's keys and its
 * +switch-master messages (the pure parsers of redis_cluster.c and
 * redis_sentinel.c).
 *
 * It needs no redis-server and does not test the YAML walk (server/).
 */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "redis_int.h"
#include "rmaster.h"

static void set_ok(struct sl__redis_config *c, const char *k, const char *v)
{
    const char *why = "unset";
    int rc = sl__redis_config_set(c, k, v, &why);

    if (rc != SL_OK)
        fail_msg("%s: %s -> %d (%s)", k, v, rc, why ? why : "");
}

static void set_bad(struct sl__redis_config *c, const char *k, const char *v)
{
    const char *why = NULL;

    assert_int_equal(sl__redis_config_set(c, k, v, &why), SL_EINVAL);
    assert_non_null(why);
    assert_true(strlen(why) > 10);
}

static void test_every_key_sets_its_field(void **state)
{
    struct sl__redis_config c;

    (void)state;
    sl__redis_config_init(&c);
    set_ok(&c, "store.redis.host", "redis.internal");
    set_ok(&c, "store.redis.port", "6380");
    set_ok(&c, "store.redis.user", "sluice");
    set_ok(&c, "store.redis.password", "pw");
    set_ok(&c, "store.redis.prefix", "rl");
    set_ok(&c, "store.redis.timeout", "3ms");
    set_ok(&c, "store.redis.connections", "4");
    set_ok(&c, "store.redis.max_in_flight", "512");
    set_ok(&c, "store.redis.failure_policy", "deny");
    set_ok(&c, "store.redis.breaker_failures", "3");
    set_ok(&c, "store.redis.breaker_open", "2s");
    set_ok(&c, "store.redis.backoff_max", "10s");
    set_ok(&c, "store.redis.over_limit_cache", "0");
    set_ok(&c, "store.redis.expiry_slack", "250ms");
    set_ok(&c, "store.clock", "redis");
    set_ok(&c, "store.redis.policies.api.example", "allow");
    assert_string_equal(c.host, "redis.internal");
    assert_int_equal(c.port, 6380);
    assert_string_equal(c.user, "sluice");
    assert_string_equal(c.password, "pw");
    assert_string_equal(c.opts.prefix, "rl");
    assert_int_equal(c.timeout_ms, 3);
    assert_int_equal(c.connections, 4);
    assert_int_equal(c.max_in_flight, 512);
    assert_int_equal(c.policy, SL__POLICY_DENY);
    assert_int_equal(c.breaker_failures, 3);
    assert_int_equal(c.breaker_open_ms, 2000);
    assert_int_equal(c.backoff_max_ms, 10000);
    assert_int_equal(c.olc_entries, 0);
    assert_int_equal(c.opts.slack_ms, 250);
    assert_true(c.opts.redis_clock);
    assert_int_equal(c.n_domains, 1);
    assert_string_equal(c.domains[0].domain, "api.example");
    assert_int_equal(c.domains[0].policy, SL__POLICY_ALLOW);
    /* Redis Cluster and rules across nodes */
    assert_false(c.cluster);
    set_ok(&c, "store.redis.cluster", "true");
    set_ok(&c, "store.redis.nodes", "10.0.0.5:7000,redis-b:7001,[::1]:7002");
    set_ok(&c, "store.redis.rules_sync", "true");
    assert_true(c.cluster);
    assert_string_equal(c.nodes, "10.0.0.5:7000,redis-b:7001,[::1]:7002");
    assert_true(c.rules_sync);
    set_ok(&c, "store.redis.cluster", "false");
    assert_false(c.cluster);
    /* where checks run: auto by default (detected on connect) */
    assert_int_equal(c.engine, SL__ENGINE_AUTO);
    set_ok(&c, "store.redis.engine", "module");
    assert_int_equal(c.engine, SL__ENGINE_MODULE);
    set_ok(&c, "store.redis.engine", "function");
    assert_int_equal(c.engine, SL__ENGINE_FUNCTION);
    set_ok(&c, "store.redis.engine", "script");
    assert_int_equal(c.engine, SL__ENGINE_SCRIPT);
    set_ok(&c, "store.redis.engine", "auto");
    assert_int_equal(c.engine, SL__ENGINE_AUTO);
}

static void test_bad_values_say_what_to_fix(void **state)
{
    struct sl__redis_config c;

    (void)state;
    sl__redis_config_init(&c);
    set_bad(&c, "store.redis.port", "0");
    set_bad(&c, "store.redis.port", "70000");
    set_bad(&c, "store.redis.port", "http");
    set_bad(&c, "store.redis.timeout", "5"); /* a bare number: no unit */
    set_bad(&c, "store.redis.connections", "-1");
    set_bad(&c, "store.redis.failure_policy", "maybe");
    set_bad(&c, "store.clock", "ntp");
    set_bad(&c, "store.redis.prefix", "a:b");
    set_bad(&c, "store.redis.prefix", "");
    set_bad(&c, "store.redis.policies.", "deny");
    set_bad(&c, "store.redis.policies.d", "sometimes");
    set_bad(&c, "store.redis.cluster", "yes");
    set_bad(&c, "store.redis.nodes", "10.0.0.5");
    set_bad(&c, "store.redis.nodes", "10.0.0.5:0");
    set_bad(&c, "store.redis.nodes", "10.0.0.5:7000,");
    set_bad(&c, "store.redis.nodes", ":7000");
    set_bad(&c, "store.redis.nodes", "h:70000");
    set_bad(&c, "store.redis.engine", "lua");
    assert_false(c.cluster);
    assert_int_equal(c.engine, SL__ENGINE_AUTO);
    assert_string_equal(c.nodes, "");
    assert_int_equal(c.port, 6379); /* refused values change nothing */
    assert_int_equal(c.timeout_ms, 5);
    assert_int_equal(c.n_domains, 0);
}

static void test_unknown_keys_are_the_callers(void **state)
{
    struct sl__redis_config c;

    (void)state;
    sl__redis_config_init(&c);
    assert_int_equal(sl__redis_config_set(&c, "store.max_bytes", "1MiB", NULL), SL_ENOENT);
    assert_int_equal(sl__redis_config_set(&c, "store.redis.hots", "x", NULL), SL_ENOENT);
}

static void test_domain_policies_are_capped(void **state)
{
    struct sl__redis_config c;
    char key[64];

    (void)state;
    sl__redis_config_init(&c);
    for (int i = 0; i < SL__REDIS_MAX_DOMAIN_POLICIES; i++) {
        snprintf(key, sizeof(key), "store.redis.policies.d%d", i);
        set_ok(&c, key, "deny");
    }
    set_bad(&c, "store.redis.policies.one-more", "deny");
    assert_int_equal(c.n_domains, SL__REDIS_MAX_DOMAIN_POLICIES);
}

/* Address lists: IPv4, names, IPv6 in brackets (kept bare) or bare as
 * Redis prints it; every malformed one refused. */
static void test_address_lists(void **state)
{
    struct sl__cnode a[4];

    (void)state;
    assert_int_equal(sl__redis_parse_addrs("", a, 4), 0);
    assert_int_equal(sl__redis_parse_addrs("10.0.0.5:7000,[::1]:7001,fd00::7:7002", a, 4), 3);
    assert_string_equal(a[0].host, "10.0.0.5");
    assert_int_equal(a[0].port, 7000);
    assert_string_equal(a[1].host, "::1");
    assert_int_equal(a[1].port, 7001);
    assert_string_equal(a[2].host, "fd00::7"); /* the last ':' separates the port */
    assert_int_equal(a[2].port, 7002);
    assert_int_equal(sl__redis_parse_addrs("[fe80::1%lo]:26379", a, 4), 1);
    assert_string_equal(a[0].host, "fe80::1%lo");
    const char *bad[] = {
        "h",       "h:",      ":7000",   "[]:7000", "[::1:7000", "::1]:7000",          "h:0",
        "h:65536", "h:7000,", ",h:7000", "h:70a0",  "h:123456",  "a:1,b:2,c:3,d:4,e:5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (sl__redis_parse_addrs(bad[i], a, 4) != -1)
            fail_msg("accepted '%s'", bad[i]);
}

static void test_hosts_and_sentinel_keys(void **state)
{
    struct sl__redis_config c;
    char many[512] = "";

    (void)state;
    sl__redis_config_init(&c);
    assert_string_equal(c.sentinels, "");
    assert_string_equal(c.master_name, "");
    set_ok(&c, "store.redis.host", "[::1]");
    assert_string_equal(c.host, "::1");
    set_ok(&c, "store.redis.host", "fd00::5");
    assert_string_equal(c.host, "fd00::5");
    set_bad(&c, "store.redis.host", "[::1");
    set_bad(&c, "store.redis.host", "");
    set_ok(&c, "store.redis.sentinels", "10.0.0.5:26379,[fd00::6]:26379");
    set_ok(&c, "store.redis.master_name", "mymaster");
    assert_string_equal(c.sentinels, "10.0.0.5:26379,[fd00::6]:26379");
    assert_string_equal(c.master_name, "mymaster");
    for (int i = 0; i < 9; i++) /* one more than SL__SENTINEL_MAX */
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%ss%d:26379", i ? "," : "", i);
    set_bad(&c, "store.redis.sentinels", many);
    set_bad(&c, "store.redis.sentinels", "10.0.0.5");
    assert_string_equal(c.sentinels, "10.0.0.5:26379,[fd00::6]:26379"); /* unchanged */
}

/* Half a Sentinel configuration, or Sentinel with a cluster, is refused
 * before anything connects. */
static void test_store_refuses_half_a_sentinel_config(void **state)
{
    struct sl__redis_config c;
    struct sl__store *s = NULL;
    uv_loop_t loop;
    sl_limiter *lim = NULL;
    struct sl_limiter_config lc;

    (void)state;
    sl_limiter_config_init(&lc);
    assert_int_equal(sl_limiter_new(&lc, &lim), SL_OK);
    uv_loop_init(&loop);
    sl__redis_config_init(&c);
    set_ok(&c, "store.redis.sentinels", "127.0.0.1:26379");
    assert_int_equal(sl__store_redis_new(&loop, &c, lim, &s), SL_EINVAL);
    sl__redis_config_init(&c);
    set_ok(&c, "store.redis.master_name", "m");
    assert_int_equal(sl__store_redis_new(&loop, &c, lim, &s), SL_EINVAL);
    set_ok(&c, "store.redis.sentinels", "127.0.0.1:26379");
    set_ok(&c, "store.redis.cluster", "true");
    assert_int_equal(sl__store_redis_new(&loop, &c, lim, &s), SL_EINVAL);
    assert_null(s);
    uv_loop_close(&loop);
    sl_limiter_free(lim);
}

/* +switch-master messages: ours gives the new address; another master's
 * is not ours; malformed ones are refused. */
static void test_switch_master_messages(void **state)
{
    struct sl__cnode to;
    const char *ours = "mymaster 127.0.0.1 6379 127.0.0.1 6380";

    (void)state;
    assert_int_equal(sl__sentinel_parse_switch(ours, strlen(ours), "mymaster", &to), SL_OK);
    assert_string_equal(to.host, "127.0.0.1");
    assert_int_equal(to.port, 6380);
    assert_int_equal(sl__sentinel_parse_switch(ours, strlen(ours), "other", &to), SL_ENOENT);
    assert_int_equal(sl__sentinel_parse_switch(ours, strlen(ours), "mymast", &to), SL_ENOENT);
    const char *v6 = "m ::1 6379 fd00::2 26380";
    assert_int_equal(sl__sentinel_parse_switch(v6, strlen(v6), "m", &to), SL_OK);
    assert_string_equal(to.host, "fd00::2");
    assert_int_equal(to.port, 26380);
    const char *bad[] = {"",
                         "m",
                         "m 1.1.1.1 1 2.2.2.2",
                         "m 1.1.1.1 1 2.2.2.2 0",
                         "m 1.1.1.1 1 2.2.2.2 65536",
                         "m 1.1.1.1 1 2.2.2.2 80x",
                         "m 1.1.1.1 1 2.2.2.2 80 extra"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (sl__sentinel_parse_switch(bad[i], strlen(bad[i]), "m", &to) != SL_EINVAL)
            fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_sets_its_field),
        cmocka_unit_test(test_bad_values_say_what_to_fix),
        cmocka_unit_test(test_unknown_keys_are_the_callers),
        cmocka_unit_test(test_domain_policies_are_capped),
        cmocka_unit_test(test_address_lists),
        cmocka_unit_test(test_hosts_and_sentinel_keys),
        cmocka_unit_test(test_store_refuses_half_a_sentinel_config),
        cmocka_unit_test(test_switch_master_messages),
    };
    signal(SIGPIPE, SIG_IGN); /* as sluiced does: writing to a Redis that died is EPIPE */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
