/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_read.c - reading a rules file consistently (server/core/
 * rules_read.c): a file rewritten in pieces while it is read comes back
 * whole, as it finally stands, never a mix; a file that holds still is
 * read once; a file gone past the debounce is reported gone (or, at start,
 * an error) and one recreated within it is read; a stopping server ends
 * the wait.
 *
 * The writers are threads of this test; nothing here measures time, the
 * debounces only order events.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "rules_read.h"
#include "sluice.h"

static char path[64];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Make the file look written long ago (older than any debounce here). */
static void age_file(void)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 3600;
    tv[1] = tv[0];
    assert_int_equal(utimes(path, tv), 0);
}

static int setup(void **st)
{
    (void)st;
    snprintf(path, sizeof(path), "rules_read_%ld.yaml", (long)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    unlink(path);
    return 0;
}

static void test_still_file_read_once(void **st)
{
    struct sl__rules_read opt = {.debounce_ms = 200};
    char *text = NULL;
    size_t len = 0;

    (void)st;
    write_file("domain: a\n");
    age_file();
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL_OK);
    assert_int_equal(len, 10);
    assert_memory_equal(text, "domain: a\n", 10);
    assert_int_equal(opt.reads, 1);
    free(text);
}

/* The final text, and what the writer writes before it. */
#define FINAL "domain: final\ndescriptors:\n  - {key: user, value: done}\n"

/* Rewrites the file 15 times, each time in three pieces 25 ms apart, then
 * writes FINAL the same way: about 1.2 s in all, longer than the debounce,
 * whose 500 ms leave room for the writer being descheduled on a loaded
 * machine. */
static void *slow_writer(void *arg)
{
    (void)arg;
    for (int round = 0; round <= 15; round++) {
        char text[128];
        int n = round < 15 ? snprintf(text, sizeof(text),
                                      "domain: round%d\ndescriptors:\n  - "
                                      "{key: user, value: v%d}\n",
                                      round, round)
                           : snprintf(text, sizeof(text), "%s", FINAL);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        for (int k = 0; k < 3; k++) {
            fwrite(text + k * n / 3, 1, (size_t)((k + 1) * n / 3 - k * n / 3), f);
            fflush(f);
            sleep_ms(25);
        }
        fclose(f);
    }
    return NULL;
}

static void test_rewritten_file_read_whole_and_last(void **st)
{
    struct sl__rules_read opt = {.debounce_ms = 500};
    pthread_t th;
    char *text = NULL;
    size_t len = 0;

    (void)st;
    write_file("domain: first\n");
    assert_int_equal(pthread_create(&th, NULL, slow_writer, NULL), 0);
    sleep_ms(5);
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL_OK);
    pthread_join(th, NULL);
    assert_int_equal(len, strlen(FINAL));
    assert_memory_equal(text, FINAL, len);
    assert_true(opt.reads >= 2);
    free(text);
}

static void test_absent_file(void **st)
{
    struct sl__rules_read opt = {.debounce_ms = 20};
    char *text = NULL;
    size_t len = 0;

    (void)st;
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL_EINVAL); /* at start */
    opt.absent_may_be_gone = true;
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL__RULES_READ_GONE);
    assert_int_equal(opt.reads, 2); /* looked again after the debounce */
}

static void *late_creator(void *arg)
{
    (void)arg;
    sleep_ms(20);
    write_file("domain: back\n");
    return NULL;
}

static void test_recreated_within_debounce(void **st)
{
    /* the creator comes back after 20 ms: the debounce is far longer, so
     * that a loaded machine delaying the creator does not fail the test */
    struct sl__rules_read opt = {.debounce_ms = 1000, .absent_may_be_gone = true};
    pthread_t th;
    char *text = NULL;
    size_t len = 0;

    (void)st;
    assert_int_equal(pthread_create(&th, NULL, late_creator, NULL), 0);
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL_OK);
    pthread_join(th, NULL);
    assert_int_equal(len, 13);
    assert_memory_equal(text, "domain: back\n", 13);
    free(text);
}

static atomic_bool stop;

static void *stopper(void *arg)
{
    (void)arg;
    sleep_ms(30);
    atomic_store(&stop, true);
    return NULL;
}

/* A fresh file under a long debounce: the read waits, until the server
 * stops. */
static void test_stop_ends_the_wait(void **st)
{
    struct sl__rules_read opt = {.debounce_ms = 3600 * 1000, .stop = &stop};
    pthread_t th;
    char *text = NULL;
    size_t len = 0;

    (void)st;
    atomic_store(&stop, false);
    write_file("domain: young\n");
    assert_int_equal(pthread_create(&th, NULL, stopper, NULL), 0);
    assert_int_equal(sl__rules_read(path, &opt, &text, &len), SL__RULES_READ_STOPPED);
    pthread_join(th, NULL);
    assert_null(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_still_file_read_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewritten_file_read_whole_and_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recreated_within_debounce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_ends_the_wait, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
