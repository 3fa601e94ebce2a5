/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_keytab.c - configuration key tables (conf/keytab.c): every type sets
 * its field from text, bad text is refused with the key's path and what to
 * fix and changes nothing, defaults come from the rows through the same
 * parser, owned strings are freed, and --help prints one line per row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keytab.h"
#include "sluice.h"

enum color { RED, GREEN, BLUE };

struct cfg {
    unsigned workers;
    uint64_t big;
    size_t bytes;
    int64_t timeout_ms;
    bool watch;
    char *token;
    char *path;
    char name[8];
    enum color color;
    bool flag_choice;
    int even;
};

static const char *const colors[] = {"red", "green", "blue", NULL};
static const char *const onoff[] = {"off", "on", NULL};

static int parse_even(const char *text, void *field, const char **why)
{
    uint64_t v;

    if (sl__keytab_parse_u64(text, 1000, &v) != 0 || v % 2 != 0) {
        *why = "must be an even number up to 1000";
        return -1;
    }
    *(int *)field = (int)v;
    return 0;
}

#define F(m) SL__KF(struct cfg, m)
static const struct sl__key keys[] = {
    {"workers", SL__K_UINT, F(workers), "4", "threads", .min = 1, .max = 64},
    {"big", SL__K_UINT, F(big), "0", "a 64-bit count"},
    {"store.max_bytes", SL__K_SIZE, F(bytes), "64MiB", "cap"},
    {"server.timeout", SL__K_DUR_MS, F(timeout_ms), "1500ms", "timeout"},
    {"watch", SL__K_BOOL, F(watch), "true", "watch files"},
    {"admin.token", SL__K_STR, F(token), NULL, "token"},
    {"rules.db", SL__K_PATH, F(path), "rules.db", "database"},
    {"name", SL__K_BUF, F(name), "abc", "a short name"},
    {"color", SL__K_CHOICE, F(color), "green", "red | green | blue", .choices = colors},
    {"flag", SL__K_CHOICE, F(flag_choice), "on", "off | on", .choices = onoff},
    {"even", SL__K_CUSTOM, F(even), "2", "an even number", .parse = parse_even},
};
#define N (sizeof(keys) / sizeof(keys[0]))

static const struct sl__key *key(const char *path)
{
    const struct sl__key *k = sl__keytab_find(keys, N, path);
    assert_non_null(k);
    return k;
}

static void set_ok(struct cfg *c, const char *path, const char *text)
{
    char err[256] = "";
    if (sl__keytab_set(key(path), c, text, "/etc/sluice", err, sizeof(err)) != 0)
        fail_msg("%s = %s: %s", path, text, err);
}

/* Refused, with a message that starts with the key and names the bad text. */
static void set_bad(struct cfg *c, const char *path, const char *text)
{
    char err[256] = "";
    assert_int_equal(sl__keytab_set(key(path), c, text, NULL, err, sizeof(err)), -1);
    assert_int_equal(strncmp(err, path, strlen(path)), 0);
    assert_non_null(strstr(err, text));
}

static void test_defaults_come_from_the_rows(void **state)
{
    struct cfg c = {0};

    (void)state;
    assert_int_equal(sl__keytab_defaults(keys, N, &c), 0);
    assert_int_equal(c.workers, 4);
    assert_int_equal(c.bytes, 64u << 20);
    assert_int_equal(c.timeout_ms, 1500);
    assert_true(c.watch);
    assert_null(c.token);
    assert_string_equal(c.path, "rules.db"); /* no directory for defaults */
    assert_string_equal(c.name, "abc");
    assert_int_equal(c.color, GREEN);
    assert_true(c.flag_choice);
    assert_int_equal(c.even, 2);
    sl__keytab_free(keys, N, &c);
    assert_null(c.path);
}

static void test_every_type_sets_its_field(void **state)
{
    struct cfg c = {0};

    (void)state;
    assert_int_equal(sl__keytab_defaults(keys, N, &c), 0);
    set_ok(&c, "workers", "64");
    set_ok(&c, "big", "18446744073709551615");
    set_ok(&c, "store.max_bytes", "1GiB");
    set_ok(&c, "server.timeout", "0s");
    set_ok(&c, "watch", "false");
    set_ok(&c, "admin.token", "s3cret");
    set_ok(&c, "admin.token", "again"); /* the old string is freed (ASan's leak check) */
    set_ok(&c, "rules.db", "db/rules.db");
    set_ok(&c, "name", "abcdefg");
    set_ok(&c, "color", "BLUE"); /* names are matched without case */
    set_ok(&c, "flag", "off");
    set_ok(&c, "even", "40");
    assert_int_equal(c.workers, 64);
    assert_true(c.big == UINT64_MAX);
    assert_int_equal(c.bytes, 1u << 30);
    assert_int_equal(c.timeout_ms, 0);
    assert_false(c.watch);
    assert_string_equal(c.token, "again");
    assert_string_equal(c.path, "/etc/sluice/db/rules.db"); /* relative to the config */
    assert_string_equal(c.name, "abcdefg");
    assert_int_equal(c.color, BLUE);
    assert_false(c.flag_choice);
    assert_int_equal(c.even, 40);
    set_ok(&c, "rules.db", "/abs/rules.db");
    assert_string_equal(c.path, "/abs/rules.db");
    sl__keytab_free(keys, N, &c);
}

static void test_bad_text_is_refused_and_changes_nothing(void **state)
{
    struct cfg c = {0};

    (void)state;
    assert_int_equal(sl__keytab_defaults(keys, N, &c), 0);
    set_bad(&c, "workers", "0");  /* below min */
    set_bad(&c, "workers", "65"); /* above max */
    set_bad(&c, "workers", "-1");
    set_bad(&c, "workers", "4x");
    set_bad(&c, "big", "18446744073709551616");
    set_bad(&c, "store.max_bytes", "64XB");
    set_bad(&c, "store.max_bytes", "99999999999999999999G");
    set_bad(&c, "server.timeout", "10"); /* a bare number: no unit */
    set_bad(&c, "watch", "yes");
    set_bad(&c, "name", "abcdefgh"); /* 8 bytes do not fit with the NUL */
    set_bad(&c, "color", "purple");
    set_bad(&c, "even", "3");
    assert_int_equal(c.workers, 4);
    assert_int_equal(c.bytes, 64u << 20);
    assert_int_equal(c.timeout_ms, 1500);
    assert_true(c.watch);
    assert_string_equal(c.name, "abc");
    assert_int_equal(c.color, GREEN);
    assert_int_equal(c.even, 2);
    sl__keytab_free(keys, N, &c);
}

static void test_help_prints_every_row(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    (void)state;
    sl__keytab_help(keys, N, f);
    fclose(f);
    for (size_t i = 0; i < N; i++) {
        char line[128];
        snprintf(line, sizeof(line), "  %-32s %-10s %s\n", keys[i].path,
                 keys[i].def ? keys[i].def : "(none)", keys[i].help);
        assert_non_null(strstr(text, line));
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_come_from_the_rows),
        cmocka_unit_test(test_every_type_sets_its_field),
        cmocka_unit_test(test_bad_text_is_refused_and_changes_nothing),
        cmocka_unit_test(test_help_prints_every_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
