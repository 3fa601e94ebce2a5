/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_resp_parse.c - the RESP request parser: whole commands, every split
 * point of a command (need more, never a wrong parse), pipelined commands,
 * inline lines, length lines short and long, and every cap and malformation
 * answered with -1 before the payload is buffered. It does not test commands (the integration tests
 * do).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp_parse.h"

#define CAP (1u << 20)

static struct sl__resp_cmd cmd;

static ssize_t parse(const char *s, size_t max)
{
    return sl__resp_parse(s, strlen(s), max, &cmd);
}

static void assert_arg(size_t i, const char *want)
{
    assert_true(i < cmd.argc);
    assert_int_equal(cmd.argv[i].len, strlen(want));
    assert_memory_equal(cmd.argv[i].p, want, strlen(want));
}

static void multibulk_whole(void **state)
{
    const char *s = "*3\r\n$11\r\nCL.THROTTLE\r\n$0\r\n\r\n$4\r\na\r\nb\r\n";

    assert_int_equal(parse(s, CAP), (ssize_t)strlen(s));
    assert_int_equal(cmd.argc, 3);
    assert_arg(0, "CL.THROTTLE");
    assert_arg(1, "");
    assert_arg(2, "a\r\nb"); /* binary-safe: CRLF inside a bulk */
}

static void every_prefix_needs_more(void **state)
{
    const char *s = "*2\r\n$4\r\nECHO\r\n$12\r\nhello, world\r\n";
    size_t n = strlen(s);

    for (size_t i = 0; i < n; i++)
        assert_int_equal(sl__resp_parse(s, i, CAP, &cmd), -2);
    assert_int_equal(sl__resp_parse(s, n, CAP, &cmd), (ssize_t)n);
    assert_arg(1, "hello, world");
}

static void pipelined_takes_one_at_a_time(void **state)
{
    const char *s = "*1\r\n$4\r\nPING\r\nECHO x\r\n*1\r\n$4\r\nQUIT\r\n";
    size_t off = 0, n = strlen(s);
    const char *names[] = {"PING", "ECHO", "QUIT"};

    for (int k = 0; k < 3; k++) {
        ssize_t r = sl__resp_parse(s + off, n - off, CAP, &cmd);
        assert_true(r > 0);
        assert_arg(0, names[k]);
        off += (size_t)r;
    }
    assert_int_equal(off, n);
}

static void inline_words(void **state)
{
    const char *line = "  SL.CHECK  api\t1 user  alice \r\n";

    assert_int_equal(parse(line, CAP), (ssize_t)strlen(line));
    assert_int_equal(cmd.argc, 5);
    assert_arg(0, "SL.CHECK");
    assert_arg(4, "alice");
    assert_int_equal(parse("PING\n", CAP), 5); /* bare LF, as telnet may send */
    assert_int_equal(cmd.argc, 1);
    assert_int_equal(parse("\r\n", CAP), 2); /* empty line: nothing to run */
    assert_int_equal(cmd.argc, 0);
    assert_int_equal(parse("PIN", CAP), -2);
}

static void caps_and_malformations(void **state)
{
    static const char *const bad[] = {
        "*-1\r\n",                              /* a null array is no command */
        "*1201\r\n",                            /* above SL__RESP_MAX_ARGS */
        "*1\r\n$-1\r\n",                        /* a null bulk is no argument */
        "*1\r\n$2000000\r\n",                   /* declared above the cap: refused at once */
        "*1\r\n:1\r\n",                         /* only bulk strings in a request */
        "*1\r\n$1\r\nab\r\n",                   /* payload longer than declared */
        "*x\r\n",                               /* not a number */
        "*\r\n",                                /* no digits */
        "*1\n",                                 /* LF without CR */
        "*1234567890123456789012345678\r\n",    /* header line above its cap */
        "*1\r\n$9999999999999999999999999\r\n", /* found by fuzz_resp: no overflow */
        "$3\r\nfoo\r\n",                        /* a bulk string alone */
        "+OK\r\n",                              /* replies are not requests */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(bad[i], CAP), -1);
}

/* Length lines of one, two and more digits, with and without bytes after
 * them in the buffer (the short ones are read at once when they can be),
 * leading zeros, and short lines that go wrong after their digits. */
static void length_lines(void **state)
{
    static const size_t lens[] = {0, 1, 9, 10, 42, 99, 100, 12345};
    static char buf[32768], arg[12346];
    static const char *const bad[] = {
        "*1\r\n$1\rx\r\n",   /* CR without LF after one digit */
        "*1\r\n$12\rxx\r\n", /* and after two */
        "*1\r\n$1x\r\nab\r\n", "*1\r\n$12x\r\n", "*1\r\n$-5\r\n12345\r\n",
        "*1\r\n$\r\n\r\n",     "*1x\r\n",
    };

    memset(arg, 'a', sizeof(arg) - 1);
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        int n = snprintf(buf, sizeof(buf), "*1\r\n$%zu\r\n%.*s\r\n", lens[k], (int)lens[k], arg);

        assert_int_equal(parse(buf, CAP), n); /* ends where the buffer does */
        assert_int_equal(cmd.argc, 1);
        assert_int_equal(cmd.argv[0].len, lens[k]);
        strcpy(buf + n, "*1\r\n$4\r\nPING\r\n"); /* and with the next command after it */
        assert_int_equal(parse(buf, CAP), n);
        assert_int_equal(cmd.argv[0].len, lens[k]);
        for (int cut = 0; cut < n; cut++) /* every prefix: need more */
            assert_int_equal(sl__resp_parse(buf, (size_t)cut, CAP, &cmd), -2);
    }
    assert_int_equal(parse("*01\r\n$04\r\nPING\r\n", CAP), 16); /* leading zeros */
    assert_arg(0, "PING");
    assert_int_equal(parse("*1\r\n$007\r\nCL.CELL\r\n", CAP), 19);
    assert_arg(0, "CL.CELL");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(bad[i], CAP), -1);
}

static void whole_command_counts_against_the_cap(void **state)
{
    const char *s = "*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n";

    assert_int_equal(parse(s, strlen(s)), (ssize_t)strlen(s));
    assert_int_equal(parse(s, strlen(s) - 1), -1);
    /* an unterminated header line cannot grow without bound */
    char digits[64];
    memset(digits, '1', sizeof(digits));
    digits[0] = '*';
    assert_int_equal(sl__resp_parse(digits, sizeof(digits), CAP, &cmd), -1);
}

static void inline_cap(void **state)
{
    size_t n = 100;
    char *s = malloc(n);

    memset(s, 'x', n);
    assert_int_equal(sl__resp_parse(s, n, 64, &cmd), -1); /* no newline within the cap */
    assert_int_equal(sl__resp_parse(s, 10, 64, &cmd), -2);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(multibulk_whole),
        cmocka_unit_test(every_prefix_needs_more),
        cmocka_unit_test(pipelined_takes_one_at_a_time),
        cmocka_unit_test(inline_words),
        cmocka_unit_test(caps_and_malformations),
        cmocka_unit_test(length_lines),
        cmocka_unit_test(whole_command_counts_against_the_cap),
        cmocka_unit_test(inline_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
