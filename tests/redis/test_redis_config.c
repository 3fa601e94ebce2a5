/*
 * test_redis_config.c - the Redis store's configuration keys
 * (store/redis/redis_config.c): every key sets its field, bad values are refused
 * with a sentence saying what to fix, unknown keys are left to the caller
 * (SL_ENOENT), per-domain policies accumulate up to their cap.
 *
 * It needs no redis-server and does not test the YAML walk (server/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "redis.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_sets_its_field),
        cmocka_unit_test(test_bad_values_say_what_to_fix),
        cmocka_unit_test(test_unknown_keys_are_the_callers),
        cmocka_unit_test(test_domain_policies_are_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
