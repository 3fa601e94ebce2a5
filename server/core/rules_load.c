/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_load.c - reading the rules files into a builder and publishing the
 * compiled snapshot. A failing build changes nothing: the previous snapshot
 * stays in its slot and every diagnostic is logged as file:line:col.
 *
 * A check (sl__rules_check) goes the same way, printing instead of logging
 * and creating nothing.
 *
 * It does not watch files (watch.c does) or parse YAML (the library does).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rules_load.h"
#include "rulesdb.h"
#include "xalloc.h"

/* Rules files above this size are refused rather than read. */
#define RULES_FILE_MAX (16u << 20)

/* Where a load's problems go: the log (the daemon), or one plain line each
 * on a stream (a check: sluiced -t, sluice check -c). A check creates
 * nothing: a rules database that does not exist yet is taken as empty,
 * which it would be once the daemon starts. */
struct how {
    FILE *out; /* NULL: the log */
    bool create_db;
};

static void report(const struct how *h, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One problem: a line on the check's stream, or a logged `event`. */
static void report(const struct how *h, const char *event, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (h->out != NULL)
        fprintf(h->out, "%s\n", line);
    else
        sl__log_event(SL__LOG_ERROR, event, "%s", line);
}

static int read_file(const struct how *h, const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0;
    char *p;

    if (f == NULL) {
        report(h, "rules.unreadable", "%s:1:1: cannot open rules file: %s", path, strerror(errno));
        return SL_EINVAL;
    }
    p = sl__xrealloc(NULL, cap);
    for (;;) {
        size_t k = fread(p + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        if (cap >= RULES_FILE_MAX) {
            report(h, "rules.unreadable", "%s:1:1: rules file larger than %u bytes", path,
                   RULES_FILE_MAX);
            free(p);
            fclose(f);
            return SL_ETOOBIG;
        }
        cap *= 2;
        p = sl__xrealloc(p, cap);
    }
    fclose(f);
    *text = p;
    *len = n;
    return SL_OK;
}

/* Add the database's rules after the files' (database rules win at the same
 * descriptor). A database that does not exist yet is created empty, or
 * taken as empty by a check. */
static int load_db(const struct how *h, const char *path, sl_rules_builder *b)
{
    char err[256];
    sl_rulesdb *db = NULL;
    int r;

    if (!h->create_db && access(path, F_OK) != 0 && errno == ENOENT)
        return SL_OK;
    r = sl_rulesdb_open(path, h->create_db, &db, err, sizeof(err));
    if (r == SL_ENOENT && !h->create_db)
        return SL_OK; /* an empty file: the daemon gives it its schema */
    if (r != SL_OK) {
        report(h, "rules.database_failed", "%s: rules database: %s", path, err);
        return r;
    }
    r = sl_rulesdb_load(db, b);
    if (r != SL_OK && r != SL_EPARSE)
        report(h, "rules.database_failed", "%s: rules database: %s", path, sl_rulesdb_errmsg(db));
    sl_rulesdb_close(db);
    return r == SL_EPARSE ? SL_OK : r; /* SL_EPARSE: diagnostics are in the builder */
}

/* Every rules file, then the database: every problem reported, the
 * snapshot built only when there is none (out NULL: build and drop). */
static int load(const struct sl__config *cfg, const struct how *h, sl_rules **out)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *rules = NULL;
    int r = SL_OK;

    if (b == NULL)
        return SL_ENOMEM;
    for (size_t i = 0; i < cfg->n_rules_files; i++) {
        char *text = NULL;
        size_t len = 0;
        int rf = read_file(h, cfg->rules_files[i], &text, &len);
        if (rf == SL_OK) {
            /* diagnostics are collected by the builder; build reports them */
            sl_rules_builder_add_yaml(b, text, len, cfg->rules_files[i], SL_SRC_FILE);
            free(text);
        } else if (r == SL_OK) {
            r = rf; /* and on: the other files' problems are worth seeing too */
        }
    }
    if (cfg->rules_db != NULL) {
        int rd = load_db(h, cfg->rules_db, b);
        r = r == SL_OK ? rd : r;
    }
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        report(h, "rules.invalid", "%s", sl_rules_builder_diag(b, i));
    if (r == SL_OK) {
        r = sl_rules_build(b, &rules);
        if (r != SL_OK && sl_rules_builder_ndiags(b) == 0)
            report(h, "rules.build_failed", "rules: build failed: %s", sl_strerror(r));
    }
    sl_rules_builder_free(b);
    if (out != NULL)
        *out = rules;
    else
        sl_rules_unref(rules);
    return r;
}

int sl__rules_load(const struct sl__config *cfg, sl_rules **out)
{
    const struct how h = {NULL, true};

    return load(cfg, &h, out);
}

int sl__rules_check(const struct sl__config *cfg, FILE *out)
{
    const struct how h = {out, false};

    return load(cfg, &h, NULL);
}

int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why)
{
    sl_rules *r = NULL;
    int err = sl__rules_load(cfg, &r);

    if (err != SL_OK) {
        sl__log_fields(SL__LOG_ERROR, "rules.reload_failed", &SL__LOG_STR("trigger", why), 1,
                       "rules: reload on %s failed; the previous rules keep serving", why);
        return err;
    }
    sl_rules_slot_publish(slot, r);
    sl__log_fields(SL__LOG_INFO, "rules.reloaded", &SL__LOG_STR("trigger", why), 1,
                   "rules: reloaded on %s (%zu files%s)", why, cfg->n_rules_files,
                   cfg->rules_db ? " and the database" : "");
    return SL_OK;
}
