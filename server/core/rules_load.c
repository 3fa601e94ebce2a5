/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_load.c - reading the rules files into a builder and publishing the
 * compiled snapshot. A failing build changes nothing: the previous snapshot
 * stays in its slot and every diagnostic is logged as file:line:col.
 *
 * What counts as failing, besides invalid rules: a rules file that exists
 * but holds no rules, and a domain left without descriptors - the marks of
 * a truncated or emptied file, which would otherwise drop every limit at
 * once - unless rules.allow_empty says that is meant. A listed file that is
 * deleted (and stays absent past the debounce) on a reload is not a
 * failure: its domains go, with a warning, as envoyproxy/ratelimit forgets
 * a deleted file.
 *
 * A check (sl__rules_check) goes the same way, printing instead of logging
 * and creating nothing.
 *
 * Also the size of one rules text, for the admin API's cap. It does not
 * watch files (watch.c), read them (rules_read.c: consistently) or parse
 * YAML (the library does).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "regular.h"
#include "rules_dir.h"
#include "rules_load.h"
#include "rules_read.h"
#include "rulesdb.h"
#include "sluice_int.h"
#include "store.h"
#include "xalloc.h"

/* Pause before reading again a directory caught changing. */
#define CHANGED_PAUSE_MS 10
/* read_dir_once()'s result when the directory changed under the read. */
#define DIR_CHANGED 3

static void report(const struct sl__rules_load *how, enum sl__log_level lvl, const char *event,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One problem: a line on the check's stream, or a logged `event`. */
static void report(const struct sl__rules_load *how, enum sl__log_level lvl, const char *event,
                   const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (how->out != NULL)
        fprintf(how->out, "%s\n", line);
    else
        sl__log_event(lvl, event, "%s", line);
}

/* Add the database's rules after the files' (database rules win at the same
 * descriptor). A database that does not exist yet is created empty, or
 * taken as empty by a check. */
static int load_db(const struct sl__rules_load *how, const char *path, sl_rules_builder *b)
{
    bool create = how->out == NULL;
    char err[256];
    sl_rulesdb *db = NULL;
    const char *why;
    int r;

    if (!sl__regular_or_absent(path, &why)) {
        /* SQLite would open a FIFO and block reading it */
        report(how, SL__LOG_ERROR, "rules.database_failed", "%s: rules database: %s", path, why);
        return SL_EINVAL;
    }
    if (!create && access(path, F_OK) != 0 && errno == ENOENT)
        return SL_OK;
    r = sl_rulesdb_open(path, create, &db, err, sizeof(err));
    if (r == SL_ENOENT && !create)
        return SL_OK; /* an empty file: the daemon gives it its schema */
    if (r != SL_OK) {
        report(how, SL__LOG_ERROR, "rules.database_failed", "%s: rules database: %s", path, err);
        return r;
    }
    r = sl_rulesdb_load(db, b);
    if (r != SL_OK && r != SL_EPARSE)
        report(how, SL__LOG_ERROR, "rules.database_failed", "%s: rules database: %s", path,
               sl_rulesdb_errmsg(db));
    sl_rulesdb_close(db);
    return r == SL_EPARSE ? SL_OK : r; /* SL_EPARSE: diagnostics are in the builder */
}

/* Add the text of rules file `path` to `b`; a file that holds no rules is
 * a diagnostic unless rules.allow_empty. `fix` says how to retire such a
 * file on purpose. */
static void add_text(const struct sl__config *cfg, const struct sl__rules_load *how,
                     const char *path, const char *text, size_t len, sl_rules_builder *b,
                     const char *fix)
{
    size_t before = sl__rules_builder_domains(b, NULL, 0), ndiags = sl_rules_builder_ndiags(b);
    char msg[256];

    /* diagnostics are collected by the builder; sl__rules_load reports them */
    sl_rules_builder_add_yaml(b, text, len, path, SL_SRC_FILE);
    if (sl_rules_builder_ndiags(b) > ndiags || sl__rules_builder_domains(b, NULL, 0) > before)
        return;
    if (cfg->rules_allow_empty) {
        report(how, SL__LOG_WARN, "rules.file_empty",
               "rules: %s holds no rules (allowed by rules.allow_empty)", path);
        return;
    }
    snprintf(msg, sizeof(msg),
             "the rules file holds no rules (empty or truncated?); write its domains back, %s, "
             "or set rules.allow_empty: true if that is meant",
             fix);
    sl__rules_builder_diag(b, path, 1, 1, msg);
}

/* Read rules file `path` into `b`. SL_OK (also for a file gone on a
 * reload, with a warning), or an error already logged or diagnosed. */
static int load_file(const struct sl__config *cfg, const struct sl__rules_load *how,
                     const char *path, sl_rules_builder *b)
{
    struct sl__rules_read opt = {.debounce_ms = cfg->rules_debounce_ms,
                                 .absent_may_be_gone = how->reload,
                                 .stop = how->stop};
    char *text = NULL;
    size_t len = 0;
    int r = sl__rules_read(path, &opt, &text, &len);

    if (r == SL__RULES_READ_GONE) {
        report(how, SL__LOG_WARN, "rules.file_gone",
               "rules: %s is gone (absent for longer than rules.debounce): its domains are "
               "no longer served",
               path);
        return SL_OK;
    }
    if (r == SL__RULES_READ_STOPPED)
        return SL__RULES_STOPPED;
    if (r != SL_OK)
        return r;
    add_text(cfg, how, path, text, len, b, "remove it from rules.files");
    free(text);
    return SL_OK;
}

/* Every file of one listing of a directory, read: SL_OK with texts[i]
 * (malloc'd, lens[i] bytes) for each; *changed when a file went away
 * while it was read (the directory is being updated); an error already
 * logged; SL__RULES_STOPPED. */
static int read_listed(const struct sl__config *cfg, const struct sl__rules_load *how,
                       const struct sl__rules_dir *d, char **texts, size_t *lens, bool *changed)
{
    struct sl__rules_read opt = {
        .debounce_ms = cfg->rules_debounce_ms, .absent_may_be_gone = true, .stop = how->stop};

    *changed = false;
    for (size_t i = 0; i < d->n; i++) {
        int r = sl__rules_read(d->files[i].path, &opt, &texts[i], &lens[i]);
        if (r == SL__RULES_READ_GONE) {
            *changed = true;
            return SL_OK;
        }
        if (r == SL__RULES_READ_STOPPED)
            return SL__RULES_STOPPED;
        if (r != SL_OK)
            return r;
    }
    return SL_OK;
}

static void free_texts(char **texts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
}

/* One look at directory `dir`: list, read every file, list again. SL_OK
 * with *texts when both listings agree (*got holds the listing; the
 * files read are one generation), DIR_CHANGED when the directory changed
 * meanwhile, SL_ENOENT when it is absent, else an error already reported. */
static int read_dir_once(const struct sl__config *cfg, const struct sl__rules_load *how,
                         const char *dir, struct sl__rules_dir *got, char ***texts, size_t **lens)
{
    struct sl__rules_dir after;
    char err[512];
    bool changed = false;
    int r = sl__rules_dir_scan(dir, got, err, sizeof(err));

    if (r == SL_ENOENT)
        return r;
    if (r != SL_OK) {
        report(how, SL__LOG_ERROR, "rules.unreadable", "%s:1:1: %s", dir, err);
        return r;
    }
    *texts = sl__xzalloc((got->n + 1) * sizeof(**texts));
    *lens = sl__xzalloc((got->n + 1) * sizeof(**lens));
    r = read_listed(cfg, how, got, *texts, *lens, &changed);
    if (r == SL_OK && !changed) {
        r = sl__rules_dir_scan(dir, &after, err, sizeof(err));
        changed = r != SL_OK || !sl__rules_dir_same(got, &after);
        sl__rules_dir_free(&after);
        r = SL_OK;
    }
    if (r == SL_OK && !changed)
        return SL_OK;
    free_texts(*texts, got->n);
    free(*lens);
    *texts = NULL;
    *lens = NULL;
    sl__rules_dir_free(got);
    return r == SL_OK ? DIR_CHANGED : r;
}

/* Sleep `ms` unless `stop` is set; false if it was. */
static bool pause_ms(int64_t ms, const atomic_bool *stop)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

    if (stop != NULL && atomic_load(stop))
        return false;
    nanosleep(&ts, NULL);
    return stop == NULL || !atomic_load(stop);
}

/* Read every rules file of directory `dir` into `b`, all of one
 * generation: the directory is listed before and after its files are read,
 * and read again while the two listings differ (an update under way). On
 * success *got holds the listing read. A directory absent on a reload
 * (still absent after the debounce) no longer contributes, as a file gone;
 * at start it is an error. */
static int load_dir(const struct sl__config *cfg, const struct sl__rules_load *how, const char *dir,
                    sl_rules_builder *b, struct sl__rules_dir *got)
{
    bool waited_absent = false;

    for (unsigned tries = 0; tries < SL__RULES_READ_TRIES; tries++) {
        char **texts = NULL;
        size_t *lens = NULL;
        int r = read_dir_once(cfg, how, dir, got, &texts, &lens);

        if (r == SL_ENOENT && (!how->reload || waited_absent)) {
            if (!how->reload) {
                report(how, SL__LOG_ERROR, "rules.unreadable",
                       "%s:1:1: cannot open rules directory: %s", dir, strerror(ENOENT));
                return SL_EINVAL;
            }
            report(how, SL__LOG_WARN, "rules.file_gone",
                   "rules: directory %s is gone (absent for longer than rules.debounce): its "
                   "domains are no longer served",
                   dir);
            return SL_OK;
        }
        if (r == SL_ENOENT) {
            waited_absent = true; /* replaced by remove and create? look again */
            if (!pause_ms(cfg->rules_debounce_ms, how->stop))
                return SL__RULES_STOPPED;
            continue;
        }
        if (r == DIR_CHANGED) {
            sl__dbg("rules.reread",
                    "rules: directory %s changed while it was read; reading it "
                    "again",
                    dir);
            if (!pause_ms(CHANGED_PAUSE_MS, how->stop))
                return SL__RULES_STOPPED;
            continue;
        }
        if (r != SL_OK)
            return r;
        if (got->n_dangling > 0 && how->reload)
            report(how, SL__LOG_WARN, "rules.file_dangling",
                   "%s:1:1: a symbolic link to nothing (%zu in %s); skipped", got->dangling,
                   got->n_dangling, dir);
        else if (got->n_dangling > 0)
            report(how, SL__LOG_ERROR, "rules.file_dangling",
                   "%s:1:1: a symbolic link to nothing (%zu in %s); remove it or give it its "
                   "file",
                   got->dangling, got->n_dangling, dir);
        for (size_t i = 0; i < got->n; i++)
            add_text(cfg, how, got->files[i].path, texts[i], lens[i], b,
                     "remove it from its directory");
        if (got->n == 0 && cfg->rules_allow_empty)
            report(how, SL__LOG_WARN, "rules.file_empty",
                   "rules: directory %s holds no rules files (allowed by rules.allow_empty)", dir);
        else if (got->n == 0)
            sl__rules_builder_diag(b, dir, 1, 1,
                                   "the rules directory holds no rules files (*.yaml, *.yml); "
                                   "write them back, remove it from rules.directories, or set "
                                   "rules.allow_empty: true if that is meant");
        free_texts(texts, got->n);
        free(lens);
        return got->n_dangling > 0 && !how->reload ? SL_EINVAL : SL_OK;
    }
    report(how, SL__LOG_ERROR, "rules.unsettled",
           "%s:1:1: the rules directory kept changing over %u reads; not loaded", dir,
           SL__RULES_READ_TRIES);
    return SL_EINVAL;
}

/* A snapshot with a domain of no descriptor is refused (unless allowed):
 * a file cut off after its `domain:` line would otherwise lift every limit
 * of that domain. */
static int check_census(const struct sl__config *cfg, const struct sl__rules_load *how,
                        const sl_rules *r, struct sl__rules_census *cs)
{
    sl__rules_census(r, cs);
    if (cs->empty_domain == NULL || cfg->rules_allow_empty)
        return SL_OK;
    report(how, SL__LOG_ERROR, "rules.domain_empty",
           "%s: domain '%.200s' has no descriptors (truncated?); give it its descriptors, or "
           "set rules.allow_empty: true if that is meant",
           cs->empty_origin, cs->empty_domain);
    return SL_EPARSE;
}

/* The Redis store decides every limit in Redis but adaptive_concurrency,
 * decided on each node; the hybrid store sends to Redis what it cannot
 * sync (sliding_log, concurrency, token_bucket with warmup). */
static bool redis_decided(const struct sl_limit *l)
{
    return l->algo != SL_ALGO_ADAPTIVE_CONCURRENCY;
}

static bool hybrid_redis_decided(const struct sl_limit *l)
{
    return l->algo == SL_ALGO_SLIDING_LOG || l->algo == SL_ALGO_CONCURRENCY ||
           (l->algo == SL_ALGO_TOKEN_BUCKET && l->warmup_ns != 0);
}

/* A domain that mixes adaptive_concurrency (per node) with limits decided
 * in Redis is refused with such a store (docs/distributed.md). */
static int check_adaptive_mix(const struct sl__config *cfg, const struct sl__rules_load *how,
                              const sl_rules *r)
{
    const char *type = cfg->store != NULL ? sl__store_config_type(cfg->store) : "memory";
    bool hybrid = type != NULL && strcmp(type, "hybrid") == 0;
    const char *origin, *dom;

    if (type == NULL || (strcmp(type, "redis") != 0 && !hybrid))
        return SL_OK;
    dom = sl__rules_adaptive_mix(r, hybrid ? hybrid_redis_decided : redis_decided, &origin);
    if (dom == NULL)
        return SL_OK;
    report(how, SL__LOG_ERROR, "rules.adaptive_mixed",
           "%s: domain '%.200s' mixes adaptive_concurrency limits, decided on each node, with "
           "limits the %s store decides in Redis (%s); one request cannot be decided in both "
           "places at once: put the adaptive_concurrency limits in a domain of their own",
           origin, dom, type,
           hybrid ? "sliding_log, concurrency, token_bucket with warmup" : "every other algorithm");
    return SL_EPARSE;
}

/* A domain served over RLQS (rlqs: true) holds rates only: each text is
 * checked as it is read, and the merged domain here (the database may add
 * to a file's domain). */
static int check_rlqs(const struct sl__rules_load *how, const sl_rules *r)
{
    const char *origin, *limit, *dom;
    enum sl_algo algo;

    dom = sl__rules_rlqs_nonrate(r, &origin, &limit, &algo);
    if (dom == NULL)
        return SL_OK;
    report(how, SL__LOG_ERROR, "rules.rlqs_not_rate",
           "%s: domain '%.200s' says rlqs: true but its limit '%.100s' is %s, which a rate limit "
           "quota assignment cannot carry: only rates (requests per period) may be limits in it",
           origin, dom, limit, sl_algo_name(algo));
    return SL_EPARSE;
}

static sl__rules_extra_fn extra_add;
static void *extra_arg;

void sl__rules_set_extra(sl__rules_extra_fn add, void *arg)
{
    extra_add = add;
    extra_arg = arg;
}

static void free_dirs(struct sl__rules_dir *dirs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sl__rules_dir_free(&dirs[i]);
}

static int load(const struct sl__config *cfg, const struct sl__rules_load *how, sl_rules **out,
                struct sl__rules_census *cs)
{
    struct sl__rules_dir dirs[SL__MAX_RULE_DIRS];
    sl_rules_builder *b = sl_rules_builder_new();
    int r = SL_OK;

    *out = NULL;
    memset(dirs, 0, sizeof(dirs));
    if (b == NULL)
        return SL_ENOMEM;
    /* every file, then the database, even after a failure: the other
     * files' problems are worth seeing too (unless the server stops) */
    for (size_t i = 0; i < cfg->n_rules_files && r != SL__RULES_STOPPED; i++) {
        int rf = load_file(cfg, how, cfg->rules_files[i], b);
        r = r == SL_OK ? rf : rf == SL__RULES_STOPPED ? rf : r;
    }
    for (size_t i = 0; i < cfg->n_rules_dirs && r != SL__RULES_STOPPED; i++) {
        int rf = load_dir(cfg, how, cfg->rules_dirs[i], b, &dirs[i]);
        r = r == SL_OK ? rf : rf == SL__RULES_STOPPED ? rf : r;
    }
    if (r != SL__RULES_STOPPED && extra_add != NULL) {
        int rx = extra_add(extra_arg, b);
        r = r == SL_OK ? rx : r;
    }
    if (r != SL__RULES_STOPPED && cfg->rules_db != NULL) {
        int rd = load_db(how, cfg->rules_db, b);
        r = r == SL_OK ? rd : r;
    }
    if (r != SL__RULES_STOPPED) {
        for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
            report(how, SL__LOG_ERROR, "rules.invalid", "%s", sl_rules_builder_diag(b, i));
    }
    if (r == SL_OK) {
        r = sl_rules_build(b, out);
        if (r != SL_OK && sl_rules_builder_ndiags(b) == 0)
            report(how, SL__LOG_ERROR, "rules.build_failed", "rules: build failed: %s",
                   sl_strerror(r));
    }
    sl_rules_builder_free(b);
    if (r == SL_OK)
        r = check_census(cfg, how, *out, cs);
    if (r == SL_OK)
        r = check_adaptive_mix(cfg, how, *out);
    if (r == SL_OK)
        r = check_rlqs(how, *out);
    if (r != SL_OK) {
        sl_rules_unref(*out);
        *out = NULL;
    }
    if (r == SL_OK && how->dirs != NULL)
        memcpy(how->dirs, dirs, cfg->n_rules_dirs * sizeof(dirs[0])); /* theirs now */
    else
        free_dirs(dirs, cfg->n_rules_dirs);
    return r;
}

int sl__rules_load(const struct sl__config *cfg, const struct sl__rules_load *how, sl_rules **out)
{
    struct sl__rules_census cs;

    return load(cfg, how, out, &cs);
}

/* The sources a check read, one line each. */
static void list_sources(const struct sl__config *cfg, const struct sl__rules_dir *dirs, FILE *f)
{
    for (size_t i = 0; i < cfg->n_rules_files; i++)
        fprintf(f, "rules file %s\n", cfg->rules_files[i]);
    for (size_t i = 0; i < cfg->n_rules_dirs; i++) {
        fprintf(f, "rules directory %s: %zu file%s%s", cfg->rules_dirs[i], dirs[i].n,
                dirs[i].n == 1 ? "" : "s", dirs[i].n > 0 ? ":" : "");
        for (size_t k = 0; k < dirs[i].n; k++)
            fprintf(f, "%s %s", k > 0 ? "," : "", dirs[i].files[k].name);
        fprintf(f, "\n");
    }
    if (cfg->rules_db != NULL)
        fprintf(f, "rules database %s\n", cfg->rules_db);
}

int sl__rules_check(const struct sl__config *cfg, FILE *out, FILE *list)
{
    struct sl__rules_dir dirs[SL__MAX_RULE_DIRS];
    struct sl__rules_load how = {.reload = false, .stop = NULL, .out = out, .dirs = dirs};
    struct sl__rules_census cs;
    sl_rules *r = NULL;
    int err;

    memset(dirs, 0, sizeof(dirs));
    err = load(cfg, &how, &r, &cs);
    if (err == SL_OK && list != NULL)
        list_sources(cfg, dirs, list);
    free_dirs(dirs, cfg->n_rules_dirs);
    sl_rules_unref(r);
    return err;
}

int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why,
                     const atomic_bool *stop, struct sl__rules_dir *dirs)
{
    struct sl__rules_load how = {.reload = true, .stop = stop, .dirs = dirs};
    struct sl__rules_census cs;
    sl_rules *r = NULL;
    int err = load(cfg, &how, &r, &cs);

    if (err == SL__RULES_STOPPED) {
        sl__log_fields(SL__LOG_INFO, "rules.reload_abandoned", &SL__LOG_STR("trigger", why), 1,
                       "rules: reload on %s abandoned: the server is stopping", why);
        return err;
    }
    if (err != SL_OK) {
        sl__log_fields(SL__LOG_ERROR, "rules.reload_failed", &SL__LOG_STR("trigger", why), 1,
                       "rules: reload on %s failed; the previous rules keep serving", why);
        return err;
    }
    sl_rules_slot_publish(slot, r);
    sl__log_fields(SL__LOG_INFO, "rules.reloaded", &SL__LOG_STR("trigger", why), 1,
                   "rules: reloaded on %s: %zu domains, %zu descriptors (%zu files, %zu "
                   "directories%s)",
                   why, cs.domains, cs.descriptors, cfg->n_rules_files, cfg->n_rules_dirs,
                   cfg->rules_db ? " and the database" : "");
    return SL_OK;
}

int sl__rules_text_descriptors(const char *yaml, size_t len, size_t *n, char *empty,
                               size_t empty_len)
{
    sl_rules_builder *b = sl_rules_builder_new();
    struct sl__rules_census cs;
    sl_rules *r = NULL;
    int rc;

    *n = 0;
    if (empty_len > 0)
        empty[0] = '\0';
    if (b == NULL)
        return SL_ENOMEM;
    rc = sl_rules_builder_add_yaml(b, yaml, len, "admin", SL_SRC_DB);
    if (rc == SL_OK) {
        *n = sl__rules_builder_descriptors(b);
        rc = sl_rules_build(b, &r);
    }
    if (rc == SL_OK) {
        sl__rules_census(r, &cs);
        if (cs.empty_domain != NULL && empty_len > 0)
            snprintf(empty, empty_len, "%s", cs.empty_domain);
    }
    sl_rules_unref(r);
    sl_rules_builder_free(b);
    return rc;
}
