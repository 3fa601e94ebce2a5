/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_load.c - reading the rules files into a builder and publishing the
 * compiled snapshot. A failing build changes nothing: the previous snapshot
 * stays in its slot and every diagnostic is logged as file:line:col.
 *
 * It does not watch files (watch.c does) or parse YAML (the library does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rules_load.h"
#include "rulesdb.h"
#include "xalloc.h"

/* Rules files above this size are refused rather than read. */
#define RULES_FILE_MAX (16u << 20)

static int read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0;
    char *p;

    if (f == NULL) {
        sl__err("%s:1:1: cannot open rules file: %s", path, strerror(errno));
        return SL_EINVAL;
    }
    p = sl__xrealloc(NULL, cap);
    for (;;) {
        size_t k = fread(p + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        if (cap >= RULES_FILE_MAX) {
            sl__err("%s:1:1: rules file larger than %u bytes", path, RULES_FILE_MAX);
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
 * descriptor). A database that does not exist yet is created empty. */
static int load_db(const char *path, sl_rules_builder *b)
{
    char err[256];
    sl_rulesdb *db = NULL;
    int r = sl_rulesdb_open(path, true, &db, err, sizeof(err));

    if (r != SL_OK) {
        sl__err("%s: rules database: %s", path, err);
        return r;
    }
    r = sl_rulesdb_load(db, b);
    if (r != SL_OK && r != SL_EPARSE)
        sl__err("%s: rules database: %s", path, sl_rulesdb_errmsg(db));
    sl_rulesdb_close(db);
    return r == SL_EPARSE ? SL_OK : r; /* SL_EPARSE: diagnostics are in the builder */
}

int sl__rules_load(const struct sl__config *cfg, sl_rules **out)
{
    sl_rules_builder *b = sl_rules_builder_new();
    int r = SL_OK;

    if (b == NULL)
        return SL_ENOMEM;
    for (size_t i = 0; i < cfg->n_rules_files && r == SL_OK; i++) {
        char *text = NULL;
        size_t len = 0;
        r = read_file(cfg->rules_files[i], &text, &len);
        if (r == SL_OK) {
            /* diagnostics are collected by the builder; build reports them */
            sl_rules_builder_add_yaml(b, text, len, cfg->rules_files[i], SL_SRC_FILE);
            free(text);
        }
    }
    if (r == SL_OK && cfg->rules_db != NULL)
        r = load_db(cfg->rules_db, b);
    if (r == SL_OK) {
        r = sl_rules_build(b, out);
        for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
            sl__err("%s", sl_rules_builder_diag(b, i));
        if (r != SL_OK && sl_rules_builder_ndiags(b) == 0)
            sl__err("rules: build failed: %s", sl_strerror(r));
    }
    sl_rules_builder_free(b);
    return r;
}

int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why)
{
    sl_rules *r = NULL;
    int err = sl__rules_load(cfg, &r);

    if (err != SL_OK) {
        sl__err("rules: reload on %s failed; the previous rules keep serving", why);
        return err;
    }
    sl_rules_slot_publish(slot, r);
    sl__info("rules: reloaded on %s (%zu files%s)", why, cfg->n_rules_files,
             cfg->rules_db ? " and the database" : "");
    return SL_OK;
}
