/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_cluster_rules.c - rules across nodes (server/rules_sync*.c) on a
 * real 3-master Redis Cluster: a rule pushed through one node (one that
 * does not own the rules hash's slot, so the push follows a MOVED) reaches
 * another node's subscriber, connected to a third cluster node, and lands
 * in that node's own rules database; replacement and deletion follow; a
 * rule that does not validate is kept out; with the cluster gone a pull
 * changes nothing and the local database still holds the last rules.
 *
 * The daemon-level test (node A's admin API, node B's answers, B restarted
 * without Redis) is test_cluster_daemon.py. Waits poll for at most 30 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "cluster.h"
#include "redis_cluster.h"
#include "rules_sync.h"
#include "rulesdb.h"
#include "sluice.h"

static struct rc_cluster cl;
static char dir[64], db_b[128], db_c[128];
static struct sl__rsync_config cfg_a, cfg_b;
static uv_loop_t loop;
static uv_timer_t tick;
static struct sl__rsync *sub_b;
static unsigned changes_b;

static const char yaml1[] = "domain: d1\n"
                            "descriptors:\n"
                            "  - key: user\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 10}\n";
static const char yaml2[] = "domain: d1\n"
                            "descriptors:\n"
                            "  - key: user\n"
                            "    rate_limit: {unit: minute, requests_per_unit: 20}\n";

static void on_change(void *arg)
{
    (void)arg;
    changes_b++;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

static void seed(struct sl__rsync_config *c, size_t node)
{
    sl__rsync_config_init(c);
    snprintf(c->seeds[0].host, sizeof(c->seeds[0].host), "127.0.0.1");
    c->seeds[0].port = cl.node[node].port;
    c->n_seeds = 1;
    c->period_ms = 0; /* announcements only: the test sees them work */
}

static int setup(void **state)
{
    (void)state;
    if (rc_start(&cl, 3, 0) != 0)
        return -1;
    snprintf(dir, sizeof(dir), "/tmp/sl-rsync-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(db_b, sizeof(db_b), "%s/b.db", dir);
    snprintf(db_c, sizeof(db_c), "%s/c.db", dir);
    /* A writes through a node that does not own the hash's slot. */
    char key[64];
    int n = snprintf(key, sizeof(key), "sluice:v1:{rules}");
    int owner = rc_owner(&cl, 0, sl__redis_keyslot(key, (size_t)n));
    if (owner < 0)
        return -1;
    seed(&cfg_a, (size_t)(owner + 1) % 3);
    seed(&cfg_b, (size_t)(owner + 2) % 3);
    uv_loop_init(&loop);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_tick, 10, 10);
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static int teardown(void **state)
{
    (void)state;
    sl__rsync_stop(sub_b);
    uv_close((uv_handle_t *)&tick, on_closed);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    rc_stop(&cl);
    unlink(db_b);
    unlink(db_c);
    rmdir(dir);
    return 0;
}

struct find {
    const char *id;
    char yaml[512];
    bool found;
};

static int find_row(void *arg, const struct sl_rulesdb_row *row)
{
    struct find *f = arg;

    if (strcmp(row->id, f->id) == 0) {
        f->found = true;
        snprintf(f->yaml, sizeof(f->yaml), "%s", row->yaml);
    }
    return 0;
}

static struct find lookup(const char *path, const char *id)
{
    struct find f = {id, "", false};
    sl_rulesdb *db = NULL;
    char err[128];

    if (sl_rulesdb_open(path, true, &db, err, sizeof(err)) == SL_OK) {
        sl_rulesdb_list(db, find_row, &f);
        sl_rulesdb_close(db);
    }
    return f;
}

/* Run the loop until B's database shows `id` with `yaml` (NULL: absent);
 * at most 30 s. */
static bool wait_b(const char *id, const char *yaml)
{
    for (int i = 0; i < 600; i++) {
        struct find f = lookup(db_b, id);
        if (yaml == NULL ? !f.found : f.found && strcmp(f.yaml, yaml) == 0)
            return true;
        for (int k = 0; k < 5; k++)
            uv_run(&loop, UV_RUN_ONCE);
    }
    return false;
}

static void test_rule_reaches_other_node(void **state)
{
    struct sl__rsync_stats st;
    uint64_t v1 = 0, v2 = 0, v3 = 0;
    (void)state;

    assert_int_equal(sl__rsync_start(&loop, &cfg_b, db_b, on_change, NULL, &sub_b), SL_OK);
    for (int i = 0; i < 3000; i++) {
        sl__rsync_stats(sub_b, &st);
        if (st.subscribed && st.pulls > 0)
            break;
        uv_run(&loop, UV_RUN_ONCE);
    }
    assert_true(st.subscribed);
    assert_int_equal(st.applied, 0);

    assert_int_equal(sl__rsync_push(&cfg_a, "r1", yaml1, strlen(yaml1), &v1), SL_OK);
    assert_true(wait_b("r1", yaml1));
    sl__rsync_stats(sub_b, &st);
    assert_true(st.messages >= 1);
    /* The pull writes B's database on a pool thread and tells the loop
     * afterwards: the row may be read before the change callback ran. */
    for (int i = 0; i < 3000 && changes_b == 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(changes_b >= 1);

    assert_int_equal(sl__rsync_push(&cfg_a, "r1", yaml2, strlen(yaml2), &v2), SL_OK);
    assert_true(v2 > v1);
    assert_true(wait_b("r1", yaml2));

    assert_int_equal(sl__rsync_push(&cfg_a, "r1", NULL, 0, &v3), SL_OK);
    assert_true(v3 > v2);
    assert_true(wait_b("r1", NULL));

    assert_int_equal(sl__rsync_push(&cfg_a, "r2", yaml1, strlen(yaml1), NULL), SL_OK);
    assert_true(wait_b("r2", yaml1));
}

/* A pull applies only what is newer than what it applied. */
static void test_pull_applies_newer_only(void **state)
{
    struct sl__rsync_known k = {0};
    unsigned changed = 0;
    (void)state;

    assert_int_equal(sl__rsync_push(&cfg_a, "r3", yaml1, strlen(yaml1), NULL), SL_OK);
    assert_int_equal(sl__rsync_pull(&cfg_a, db_c, &k, &changed), SL_OK);
    assert_true(changed >= 1);
    assert_true(lookup(db_c, "r3").found);
    assert_int_equal(sl__rsync_pull(&cfg_a, db_c, &k, &changed), SL_OK);
    assert_int_equal(changed, 0);
    assert_int_equal(sl__rsync_push(&cfg_a, "r3", yaml2, strlen(yaml2), NULL), SL_OK);
    assert_int_equal(sl__rsync_pull(&cfg_a, db_c, &k, &changed), SL_OK);
    assert_int_equal(changed, 1);
    assert_string_equal(lookup(db_c, "r3").yaml, yaml2);
    sl__rsync_known_free(&k);
}

static void test_invalid_rule_kept_out(void **state)
{
    static const char bad[] = "domain: d2\ndescriptors:\n  - key: k\n    bogus: 1\n";
    struct sl__rsync_known k = {0};
    unsigned changed = 0;
    (void)state;

    assert_int_equal(sl__rsync_push(&cfg_a, "bad", bad, strlen(bad), NULL), SL_OK);
    assert_int_equal(sl__rsync_pull(&cfg_a, db_c, &k, &changed), SL_OK);
    assert_false(lookup(db_c, "bad").found);
    assert_int_equal(sl__rsync_pull(&cfg_a, db_c, &k, &changed), SL_OK);
    assert_int_equal(changed, 0); /* not retried every pull */
    assert_int_equal(sl__rsync_push(&cfg_a, "bad", NULL, 0, NULL), SL_OK);
    sl__rsync_known_free(&k);
}

static void test_bad_arguments(void **state)
{
    struct sl__rsync_config c = cfg_a;
    char id[SL_RULESDB_ID_MAX + 2];
    struct sl__rsync *s = NULL;
    (void)state;

    memset(id, 'a', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    assert_int_equal(sl__rsync_push(&c, id, yaml1, strlen(yaml1), NULL), SL_EINVAL);
    assert_int_equal(sl__rsync_push(&c, "", yaml1, strlen(yaml1), NULL), SL_EINVAL);
    c.n_seeds = 0;
    assert_int_equal(sl__rsync_start(&loop, &c, db_c, NULL, NULL, &s), SL_EINVAL);
    assert_null(s);
    assert_int_equal(sl__rsync_push(&c, "x", yaml1, strlen(yaml1), NULL), SL_ENOENT);
}

/* Last: with every node gone, pushes fail, pulls change nothing, and the
 * local databases still hold the last rules. */
static void test_redis_down_keeps_local_rules(void **state)
{
    struct sl__rsync_known k = {0};
    unsigned changed = 7;
    (void)state;

    rc_stop(&cl);
    assert_int_equal(sl__rsync_push(&cfg_a, "r9", yaml1, strlen(yaml1), NULL), SL_ENOENT);
    assert_int_equal(sl__rsync_pull(&cfg_b, db_b, &k, &changed), SL_ENOENT);
    assert_int_equal(changed, 0);
    assert_true(lookup(db_b, "r2").found);
    assert_string_equal(lookup(db_b, "r2").yaml, yaml1);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_ONCE); /* the subscriber notices and retries */
    assert_true(lookup(db_b, "r2").found);
    sl__rsync_known_free(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_reaches_other_node),
        cmocka_unit_test(test_pull_applies_newer_only),
        cmocka_unit_test(test_invalid_rule_kept_out),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_redis_down_keeps_local_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
