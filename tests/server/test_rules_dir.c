/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rules_dir.c - the rules files of a directory (server/core/
 * rules_dir.c) and a directory read as one generation (rules_load.c):
 *
 * - which names are rules files: *.yaml and *.yml, never a hidden one
 *   (".x.yaml", a ConfigMap's "..data" and "..2026_..." entries);
 * - a scan follows symbolic links (a ConfigMap's "rules.yaml ->
 *   ..data/rules.yaml", "..data -> ..2026_.../"), leaves subdirectories
 *   and other names alone (not recursive), counts links to nothing, and
 *   records where each file's links lead, so two scans tell a ConfigMap's
 *   generations apart;
 * - a directory missing or not a directory is told apart;
 * - while a writer thread swaps ConfigMap generations as the kubelet
 *   does, every rules snapshot a load builds holds the two files of one
 *   generation, never one of each.
 *
 * Nothing here measures time: the writer and the loads only race.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "rules_dir.h"
#include "rules_load.h"
#include "sluice.h"

static char root[PATH_MAX];

static void pathf(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void pathf(char *out, size_t n, const char *fmt, ...)
{
    char rel[PATH_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    /* A path too long for out is a broken test: say so rather than cut it. */
    if ((size_t)snprintf(out, n, "%s/%s", root, rel) >= n)
        abort();
}

static void write_at(const char *rel, const char *text)
{
    char p[PATH_MAX];
    FILE *f;

    pathf(p, sizeof(p), "%s", rel);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void mkdir_at(const char *rel)
{
    char p[PATH_MAX];

    pathf(p, sizeof(p), "%s", rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void link_at(const char *target, const char *rel)
{
    char p[PATH_MAX];

    pathf(p, sizeof(p), "%s", rel);
    assert_int_equal(symlink(target, p), 0);
}

static void rm_rf(const char *p)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **st)
{
    (void)st;
    snprintf(root, sizeof(root), "/tmp/rules_dir_%ld_XXXXXX", (long)getpid());
    return mkdtemp(root) == NULL ? -1 : 0;
}

static int teardown(void **st)
{
    (void)st;
    rm_rf(root);
    return 0;
}

static void test_wanted_names(void **st)
{
    (void)st;
    assert_true(sl__rules_dir_wanted("rules.yaml"));
    assert_true(sl__rules_dir_wanted("a.yml"));
    assert_true(sl__rules_dir_wanted("x.y.yaml"));
    assert_false(sl__rules_dir_wanted(".hidden.yaml"));
    assert_false(sl__rules_dir_wanted("..data"));
    assert_false(sl__rules_dir_wanted("..data_tmp"));
    assert_false(sl__rules_dir_wanted("..2026_12_02_10_00_00.123456789"));
    assert_false(sl__rules_dir_wanted(".yaml"));
    assert_false(sl__rules_dir_wanted("yaml"));
    assert_false(sl__rules_dir_wanted("rules.yaml.swp"));
    assert_false(sl__rules_dir_wanted("rules.yaml~"));
    assert_false(sl__rules_dir_wanted("rules.json"));
    assert_false(sl__rules_dir_wanted("README"));
}

/* A ConfigMap-style directory with every kind of entry a scan meets. */
static void test_scan_configmap_layout(void **st)
{
    struct sl__rules_dir d;
    char dir[PATH_MAX], real[PATH_MAX], want[PATH_MAX + 64], err[256];

    (void)st;
    mkdir_at("cm");
    mkdir_at("cm/..2026_12_02_10_00_00.1");
    write_at("cm/..2026_12_02_10_00_00.1/a.yaml", "domain: a\n");
    write_at("cm/..2026_12_02_10_00_00.1/b.yml", "domain: b\n");
    link_at("..2026_12_02_10_00_00.1", "cm/..data");
    link_at("..data/a.yaml", "cm/a.yaml");
    link_at("..data/b.yml", "cm/b.yml");
    write_at("cm/.hidden.yaml", "domain: hidden\n");     /* hidden: ignored */
    write_at("cm/notes.txt", "not rules\n");             /* not yaml: ignored */
    mkdir_at("cm/sub.yaml");                             /* a directory: not read */
    write_at("cm/sub.yaml/deep.yaml", "domain: deep\n"); /* not recursive */
    mkdir_at("elsewhere");
    write_at("elsewhere/c.yaml", "domain: c\n");
    link_at("../elsewhere/c.yaml", "cm/c.yaml"); /* a link out of the directory: followed */
    link_at("..data/gone.yaml", "cm/gone.yaml"); /* leads nowhere: counted */

    pathf(dir, sizeof(dir), "cm");
    assert_int_equal(sl__rules_dir_scan(dir, &d, err, sizeof(err)), SL_OK);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.files[0].name, "a.yaml");
    assert_string_equal(d.files[1].name, "b.yml");
    assert_string_equal(d.files[2].name, "c.yaml");
    snprintf(want, sizeof(want), "%s/a.yaml", dir);
    assert_string_equal(d.files[0].path, want);
    assert_non_null(realpath(root, real));
    snprintf(want, sizeof(want), "%s/cm/..2026_12_02_10_00_00.1/a.yaml", real);
    assert_string_equal(d.files[0].target, want);
    snprintf(want, sizeof(want), "%s/elsewhere/c.yaml", real);
    assert_string_equal(d.files[2].target, want);
    assert_int_equal(d.files[0].size, 10);
    assert_int_equal(d.n_dangling, 1);
    snprintf(want, sizeof(want), "%s/gone.yaml", dir);
    assert_string_equal(d.dangling, want);
    sl__rules_dir_free(&d);
}

static void test_scan_absent_or_not_a_directory(void **st)
{
    struct sl__rules_dir d;
    char p[PATH_MAX], err[256];

    (void)st;
    pathf(p, sizeof(p), "nothing-here");
    assert_int_equal(sl__rules_dir_scan(p, &d, err, sizeof(err)), SL_ENOENT);
    assert_int_equal(d.n, 0);
    write_at("plain.yaml", "domain: a\n");
    pathf(p, sizeof(p), "plain.yaml");
    assert_int_equal(sl__rules_dir_scan(p, &d, err, sizeof(err)), SL_EINVAL);
    assert_non_null(strstr(err, "not a directory"));
    mkdir_at("empty");
    pathf(p, sizeof(p), "empty");
    assert_int_equal(sl__rules_dir_scan(p, &d, err, sizeof(err)), SL_OK);
    assert_int_equal(d.n, 0);
    sl__rules_dir_free(&d);
}

/* ------------------------------------------------------------ generations */

/* Generation g of the ConfigMap: a.yaml's limit is 1000 + g, b.yaml's
 * 2000 + g. */
static void write_generation(unsigned g, bool link_files)
{
    char rel[64], text[256], tmp[PATH_MAX], data[PATH_MAX], old[PATH_MAX];
    char olddir[PATH_MAX];
    ssize_t n;

    snprintf(rel, sizeof(rel), "cm/..gen_%06u", g);
    mkdir_at(rel);
    snprintf(tmp, sizeof(tmp), "%s/a.yaml", rel);
    snprintf(text, sizeof(text),
             "domain: alpha\ndescriptors:\n  - key: k\n"
             "    rate_limit: {unit: hour, requests_per_unit: %u}\n",
             1000 + g);
    write_at(tmp, text);
    snprintf(tmp, sizeof(tmp), "%s/b.yaml", rel);
    snprintf(text, sizeof(text),
             "domain: beta\ndescriptors:\n  - key: k\n"
             "    rate_limit: {unit: hour, requests_per_unit: %u}\n",
             2000 + g);
    write_at(tmp, text);
    pathf(data, sizeof(data), "cm/..data");
    n = readlink(data, old, sizeof(old) - 1);
    old[n > 0 ? n : 0] = '\0';
    /* the kubelet's swap: a new link, renamed over ..data, old dir removed */
    snprintf(tmp, sizeof(tmp), "..gen_%06u", g);
    link_at(tmp, "cm/..data_tmp");
    pathf(tmp, sizeof(tmp), "cm/..data_tmp");
    assert_int_equal(rename(tmp, data), 0);
    if (link_files) {
        link_at("..data/a.yaml", "cm/a.yaml");
        link_at("..data/b.yaml", "cm/b.yaml");
    }
    if (n > 0) {
        pathf(olddir, sizeof(olddir), "cm/%s", old);
        rm_rf(olddir);
    }
}

static atomic_bool writer_done;
static atomic_uint generation;

static void *swapper(void *arg)
{
    unsigned rounds = *(unsigned *)arg;

    for (unsigned g = 2; g <= rounds + 1; g++) {
        write_generation(g, false);
        atomic_store(&generation, g);
    }
    atomic_store(&writer_done, true);
    return NULL;
}

struct seen {
    long alpha, beta;
};

static void on_limit(void *arg, const char *path, const struct sl_limit *l, bool quota,
                     bool unlimited)
{
    struct seen *s = arg;

    (void)quota;
    assert_false(unlimited);
    if (strncmp(path, "alpha.", 6) == 0)
        s->alpha = (long)l->requests;
    else if (strncmp(path, "beta.", 5) == 0)
        s->beta = (long)l->requests;
}

static void test_load_sees_one_generation_while_swapping(void **st)
{
    struct sl__config cfg;
    struct sl__rules_dir dirs[1];
    struct sl__rules_load how = {.reload = true, .dirs = dirs};
    unsigned rounds = 300, loads = 0, last = 0;
    char dir[PATH_MAX], real[PATH_MAX], prefix[PATH_MAX + 16];
    pthread_t th;

    (void)st;
    mkdir_at("cm");
    write_generation(1, true);
    pathf(dir, sizeof(dir), "cm");
    assert_non_null(realpath(dir, real));
    sl__config_init(&cfg);
    cfg.rules_dirs[0] = strdup(dir);
    cfg.n_rules_dirs = 1;
    cfg.rules_debounce_ms = 0; /* the files are read at once: the race is all */
    atomic_store(&writer_done, false);
    atomic_store(&generation, 1);
    assert_int_equal(pthread_create(&th, NULL, swapper, &rounds), 0);
    while (!atomic_load(&writer_done) || loads == 0) {
        struct seen s = {-1, -1};
        sl_rules *r = NULL;
        unsigned before = atomic_load(&generation);
        memset(dirs, 0, sizeof(dirs));
        assert_int_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
        sl_rules_foreach_limit(r, on_limit, &s);
        sl_rules_unref(r);
        /* one generation, never a mix; not older than the one before */
        assert_int_equal(s.alpha - 1000, s.beta - 2000);
        assert_true((unsigned)(s.alpha - 1000) >= before);
        assert_true((unsigned)(s.alpha - 1000) >= last);
        last = (unsigned)(s.alpha - 1000);
        /* the listing names the generation read */
        assert_int_equal(dirs[0].n, 2);
        snprintf(prefix, sizeof(prefix), "%s/..gen_%06u/", real, last);
        for (size_t i = 0; i < 2; i++)
            assert_int_equal(strncmp(dirs[0].files[i].target, prefix, strlen(prefix)), 0);
        sl__rules_dir_free(&dirs[0]);
        loads++;
    }
    pthread_join(th, NULL);
    sl__config_free(&cfg);
    assert_true(loads > 0);
}

/* A broken file in a new generation refuses the whole load; an empty
 * directory is refused unless rules.allow_empty; a link to nothing is
 * skipped on a reload and refused at start; a directory missing at start
 * is an error. */
static void test_broken_or_empty_directory_refused(void **st)
{
    struct sl__config cfg;
    struct sl__rules_load how = {.reload = true};
    struct sl__rules_load start = {.reload = false};
    char dir[PATH_MAX];
    sl_rules *r = NULL;

    (void)st;
    mkdir_at("cm");
    write_generation(1, true);
    write_at("cm/..gen_000001/b.yaml", "domain: beta\ndescriptors:\n  - key: k\n    colour: red\n");
    pathf(dir, sizeof(dir), "cm");
    sl__config_init(&cfg);
    cfg.rules_dirs[0] = strdup(dir);
    cfg.n_rules_dirs = 1;
    cfg.rules_debounce_ms = 0;
    assert_int_not_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    assert_null(r);
    write_at("cm/..gen_000001/b.yaml", ""); /* emptied */
    assert_int_not_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    assert_null(r);
    write_at("cm/..gen_000001/b.yaml", "domain: beta\ndescriptors:\n  - key: k\n");
    assert_int_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    sl_rules_unref(r);
    r = NULL;
    /* a link to nothing: skipped on a reload, refused at start */
    link_at("..data/gone.yaml", "cm/gone.yaml");
    assert_int_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    sl_rules_unref(r);
    r = NULL;
    assert_int_not_equal(sl__rules_load(&cfg, &start, &r), SL_OK);
    assert_null(r);

    mkdir_at("none");
    free(cfg.rules_dirs[0]);
    pathf(dir, sizeof(dir), "none");
    cfg.rules_dirs[0] = strdup(dir);
    assert_int_not_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    cfg.rules_allow_empty = true;
    assert_int_equal(sl__rules_load(&cfg, &how, &r), SL_OK);
    sl_rules_unref(r);
    r = NULL;

    free(cfg.rules_dirs[0]);
    pathf(dir, sizeof(dir), "missing");
    cfg.rules_dirs[0] = strdup(dir);
    assert_int_not_equal(sl__rules_load(&cfg, &start, &r), SL_OK);
    assert_null(r);
    sl__config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wanted_names),
        cmocka_unit_test_setup_teardown(test_scan_configmap_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_absent_or_not_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_sees_one_generation_while_swapping, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_broken_or_empty_directory_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
