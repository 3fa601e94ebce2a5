/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rulesdb.c - the SQLite rules database: validated add, replace, list,
 * delete, persistence across reopen, precedence over file rules when
 * loaded, and clear errors (never a crash) for corrupt and locked files.
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
#include <sqlite3.h>

#include "rulesdb.h"

static char path[256];

static const char gold[] = "domain: api\n"
                           "descriptors:\n"
                           "  - key: customer\n"
                           "    value: acme\n"
                           "    rate_limit: {unit: minute, requests_per_unit: 1000}\n";
static const char file_rules[] = "domain: api\n"
                                 "descriptors:\n"
                                 "  - key: customer\n"
                                 "    value: acme\n"
                                 "    rate_limit: {unit: minute, requests_per_unit: 10}\n"
                                 "  - key: customer\n"
                                 "    rate_limit: {unit: minute, requests_per_unit: 10}\n";

static int setup(void **st)
{
    snprintf(path, sizeof(path), "rulesdb-test-%d.db", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **st)
{
    unlink(path);
    return 0;
}

static sl_rulesdb *open_db(bool create)
{
    char err[512];
    sl_rulesdb *db = NULL;

    assert_int_equal(sl_rulesdb_open(path, create, &db, err, sizeof(err)), SL_OK);
    return db;
}

static int count_rows(void *arg, const struct sl_rulesdb_row *row)
{
    (*(int *)arg)++;
    assert_string_equal(row->domain, "api");
    assert_true(row->updated_ms > 0);
    return 0;
}

static uint64_t acme_limit(sl_rules *r)
{
    struct sl_entry e = {{"customer", 8}, {"acme", 4}};
    struct sl_descriptor d = {&e, 1, -1, NULL};
    struct sl_request req = {.domain = {"api", 3}, .descriptors = &d, .n_descriptors = 1};
    struct sl_match m;

    assert_int_equal(sl_rules_match(r, &req, 0, &m), SL_OK);
    assert_int_equal(m.n_limits, 1);
    return m.limits[0]->requests;
}

static void add_list_persist_and_override(void **st)
{
    sl_rulesdb *db = open_db(true);
    sl_rules_builder *b;
    sl_rules *r = NULL;
    int n = 0;

    assert_int_equal(sl_rulesdb_put(db, "acme", gold, strlen(gold), false, NULL), SL_OK);
    assert_int_equal(sl_rulesdb_put(db, "acme", gold, strlen(gold), false, NULL),
                     SL_RULESDB_EEXIST);
    assert_non_null(strstr(sl_rulesdb_errmsg(db), "already exists"));
    assert_int_equal(sl_rulesdb_put(db, "acme", gold, strlen(gold), true, NULL), SL_OK);
    sl_rulesdb_close(db);

    db = open_db(false); /* survives a restart */
    assert_int_equal(sl_rulesdb_list(db, count_rows, &n), SL_OK);
    assert_int_equal(n, 1);
    b = sl_rules_builder_new();
    assert_int_equal(
        sl_rules_builder_add_yaml(b, file_rules, strlen(file_rules), "f.yaml", SL_SRC_FILE), SL_OK);
    assert_int_equal(sl_rulesdb_load(db, b), SL_OK);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    assert_int_equal(acme_limit(r), 1000); /* the database wins */
    sl_rules_unref(r);
    sl_rules_builder_free(b);

    assert_int_equal(sl_rulesdb_delete(db, "acme"), SL_OK);
    assert_int_equal(sl_rulesdb_delete(db, "acme"), SL_ENOENT);
    n = 0;
    assert_int_equal(sl_rulesdb_list(db, count_rows, &n), SL_OK);
    assert_int_equal(n, 0);
    sl_rulesdb_close(db);
}

static void invalid_rules_are_not_stored(void **st)
{
    const char *bad = "domain: api\ndescriptors:\n  - key: a\n    limits:\n"
                      "      - {algorithm: gcra, requests: 5, period: 5}\n";
    const char *two = "domain: a\n---\ndomain: b\n";
    sl_rulesdb *db = open_db(true);
    sl_rules_builder *diags = sl_rules_builder_new();
    int n = 0;

    assert_int_equal(sl_rulesdb_put(db, "x", bad, strlen(bad), false, diags), SL_EPARSE);
    assert_int_equal(sl_rules_builder_ndiags(diags), 1);
    assert_non_null(strstr(sl_rules_builder_diag(diags, 0), "db:x:5:48: period"));
    assert_int_equal(sl_rulesdb_put(db, "y", two, strlen(two), false, NULL), SL_EPARSE);
    assert_int_equal(sl_rulesdb_put(db, "bad id!", gold, strlen(gold), false, NULL), SL_EINVAL);
    assert_int_equal(sl_rulesdb_list(db, count_rows, &n), SL_OK);
    assert_int_equal(n, 0);
    sl_rules_builder_free(diags);
    sl_rulesdb_close(db);
}

static void corrupt_file_is_a_clear_error(void **st)
{
    FILE *f = fopen(path, "wb");
    char err[512] = "";
    sl_rulesdb *db = NULL;

    assert_non_null(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not a database at all. ", f);
    fclose(f);
    assert_int_equal(sl_rulesdb_open(path, true, &db, err, sizeof(err)), SL_RULESDB_ECORRUPT);
    assert_null(db);
    assert_non_null(strstr(err, "not a Sluice rules database"));
}

static void foreign_database_is_refused(void **st)
{
    sqlite3 *s;
    char err[512] = "";
    sl_rulesdb *db = NULL;

    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    assert_int_equal(sqlite3_exec(s, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    assert_int_equal(sl_rulesdb_open(path, true, &db, err, sizeof(err)), SL_RULESDB_ECORRUPT);
    assert_non_null(strstr(err, "schema version"));
}

static void missing_file_without_create(void **st)
{
    char err[512] = "";
    sl_rulesdb *db = NULL;

    assert_int_equal(sl_rulesdb_open(path, false, &db, err, sizeof(err)), SL_RULESDB_EIO);
    assert_non_null(strstr(err, "cannot open"));
}

static void locked_database_is_busy(void **st)
{
    sl_rulesdb *db = open_db(true);
    sqlite3 *other;
    int n = 0;

    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sl_rulesdb_put(db, "acme", gold, strlen(gold), false, NULL), SL_RULESDB_EBUSY);
    assert_non_null(strstr(sl_rulesdb_errmsg(db), "locked"));
    assert_int_equal(sl_rulesdb_list(db, count_rows, &n), SL_RULESDB_EBUSY);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    assert_int_equal(sl_rulesdb_put(db, "acme", gold, strlen(gold), false, NULL), SL_OK);
    sl_rulesdb_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(add_list_persist_and_override, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_rules_are_not_stored, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupt_file_is_a_clear_error, setup, teardown),
        cmocka_unit_test_setup_teardown(foreign_database_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_file_without_create, setup, teardown),
        cmocka_unit_test_setup_teardown(locked_database_is_busy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
