/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_server_log.c - the log's two formats (log.c): a text line is
 * "TIME LEVEL EVENT message" on one line; a JSON line is one valid object
 * whatever the message holds (quotes, control bytes, bytes that are not
 * UTF-8, more than a line's worth), with its fields whole or absent; a
 * rate-limited line says how many were left out. stderr is pointed at a
 * file for the test. It does not start a server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "log.h"

/* Run fn with stderr going to a temporary file; the lines it wrote. */
static char *capture(void (*fn)(void))
{
    FILE *f = tmpfile();
    int saved = dup(STDERR_FILENO);
    static char out[1 << 16];
    size_t n;

    assert_non_null(f);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
    fn();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    rewind(f);
    n = fread(out, 1, sizeof(out) - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

static void text_lines(void)
{
    sl__log_set_format(SL__LOG_TEXT);
    sl__log_set_level(SL__LOG_INFO);
    sl__info("server.ready", "ready");
    sl__warn("conn.refused", "two\nlines");
    sl__dbg("conn.idle_timeout", "not at info");
}

static void test_text(void **state)
{
    char *out = capture(text_lines);
    char *second;
    (void)state;

    assert_int_equal(strlen(out) > 30, 1);
    assert_memory_equal(out + 24, " info server.ready ready\n", 25);
    second = strchr(out, '\n') + 1;
    assert_string_equal(second + 24, " warn conn.refused two lines\n"); /* one event, one line */
}

static char long_msg[5000];

static void json_lines(void)
{
    struct sl__log_field f[] = {SL__LOG_STR("address", "127.0.0.1"), SL__LOG_INT("port", 6390),
                                SL__LOG_STR("odd", "a\"b\\c\x01\xff")};

    sl__log_set_format(SL__LOG_JSON);
    sl__log_set_level(SL__LOG_DEBUG);
    sl__log_fields(SL__LOG_INFO, "server.listening", f, 3, "listening on %s:%d", "127.0.0.1", 6390);
    sl__err("rules.invalid", "bad \"quote\" \\ tab\t nl\n ctl\x02 latin1 \xe9 utf8 \xc3\xa9 end");
    memset(long_msg, 'x', sizeof(long_msg) - 1);
    sl__log_fields(SL__LOG_WARN, "conn.refused", &SL__LOG_STR("limit", "server.max_connections"), 1,
                   "%s", long_msg);
    sl__log_set_format(SL__LOG_TEXT);
}

static cJSON *next_object(char **p)
{
    char *nl = strchr(*p, '\n');
    cJSON *o;

    assert_non_null(nl);
    *nl = '\0';
    o = cJSON_Parse(*p);
    if (o == NULL)
        fail_msg("not JSON: %s", *p);
    *p = nl + 1;
    return o;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static void test_json(void **state)
{
    char *p = capture(json_lines);
    cJSON *o;
    (void)state;

    o = next_object(&p);
    assert_string_equal(o->child->string, "ts");
    assert_int_equal(strlen(str_of(o, "ts")), 24);
    assert_string_equal(str_of(o, "level"), "info");
    assert_string_equal(str_of(o, "event"), "server.listening");
    assert_string_equal(str_of(o, "msg"), "listening on 127.0.0.1:6390");
    assert_string_equal(str_of(o, "address"), "127.0.0.1");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "port")->valueint, 6390);
    assert_string_equal(str_of(o, "odd"), "a\"b\\c\x01\xef\xbf\xbd");
    cJSON_Delete(o);

    o = next_object(&p);
    assert_string_equal(str_of(o, "level"), "error");
    assert_string_equal(str_of(o, "msg"), "bad \"quote\" \\ tab\t nl\n ctl\x02 latin1 \xef\xbf\xbd "
                                          "utf8 \xc3\xa9 end");
    cJSON_Delete(o);

    o = next_object(&p); /* cut, still whole, its field kept */
    assert_true(strlen(str_of(o, "msg")) > 1000 && strlen(str_of(o, "msg")) < 2048);
    assert_string_equal(str_of(o, "limit"), "server.max_connections");
    cJSON_Delete(o);
    assert_string_equal(p, "");
}

static struct sl__lograte rl;

static void rated(void)
{
    sl__log_set_format(SL__LOG_JSON);
    sl__log_set_level(SL__LOG_INFO);
    for (int i = 0; i < 5; i++)
        sl__log_rate(&rl, SL__LOG_WARN, "conn.refused", NULL, 0, "refused %d", i);
    atomic_store(&rl.next_s, 0); /* as if a second had passed */
    sl__log_rate(&rl, SL__LOG_WARN, "conn.refused", NULL, 0, "refused again");
    sl__log_set_format(SL__LOG_TEXT);
}

static void test_rate(void **state)
{
    char *p = capture(rated);
    cJSON *a, *b;
    (void)state;

    a = next_object(&p);
    b = next_object(&p);
    assert_string_equal(p, "");
    assert_string_equal(str_of(a, "msg"), "refused 0");
    assert_null(cJSON_GetObjectItemCaseSensitive(a, "suppressed"));
    assert_string_equal(str_of(b, "msg"), "refused again");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(b, "suppressed")->valueint, 4);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
