/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rulesdb.c - the SQLite rules database: schema (versioned with
 * PRAGMA user_version), validated put, delete, list, and load into a rules
 * builder. Corrupt, foreign or locked files are reported as clear errors,
 * never a crash, and a failed load adds nothing.
 *
 * It does not watch the file or publish snapshots (the daemon does).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rulesdb.h"
#include "sluice_int.h"

struct sl_rulesdb {
    sqlite3 *db;
    char path[400];
    char msg[1024];
};

static const char schema[] = "CREATE TABLE rules ("
                             " id TEXT PRIMARY KEY,"
                             " domain TEXT NOT NULL,"
                             " yaml TEXT NOT NULL,"
                             " updated_ms INTEGER NOT NULL);"
                             "PRAGMA user_version = 1;";

/* Map a SQLite result to our codes, with a sentence saying what to do. */
static int db_error(sl_rulesdb *db, int rc, const char *doing)
{
    int base = rc & 0xff;

    if (base == SQLITE_BUSY || base == SQLITE_LOCKED) {
        snprintf(db->msg, sizeof(db->msg),
                 "%s: %s: the database is locked by another process (waited %d ms); retry later",
                 db->path, doing, SL_RULESDB_BUSY_MS);
        return SL_RULESDB_EBUSY;
    }
    if (base == SQLITE_NOTADB || base == SQLITE_CORRUPT) {
        snprintf(db->msg, sizeof(db->msg),
                 "%s: %s: not a Sluice rules database, or it is corrupt; restore it from a "
                 "backup or point --db at another file",
                 db->path, doing);
        return SL_RULESDB_ECORRUPT;
    }
    snprintf(db->msg, sizeof(db->msg), "%s: %s: %s", db->path, doing,
             db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
    return SL_RULESDB_EIO;
}

static int query_int(sl_rulesdb *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return db_error(db, rc, "reading the schema");
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error(db, rc, "reading the schema");
    return SL_OK;
}

/* Create the schema in an empty file; accept only our own schema version. */
static int check_schema(sl_rulesdb *db, bool create)
{
    int64_t version, tables;
    int rc = query_int(db, "PRAGMA user_version", &version);

    if (rc == SL_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_master", &tables);
    if (rc != SL_OK)
        return rc;
    if (version == SL_RULESDB_SCHEMA)
        return SL_OK;
    if (version == 0 && tables == 0 && create) {
        rc = sqlite3_exec(db->db, schema, NULL, NULL, NULL);
        return rc == SQLITE_OK ? SL_OK : db_error(db, rc, "creating the schema");
    }
    if (version == 0 && tables == 0) {
        snprintf(db->msg, sizeof(db->msg), "%s: the database is empty; add a rule first", db->path);
        return SL_ENOENT;
    }
    snprintf(db->msg, sizeof(db->msg),
             "%s: schema version %lld is not Sluice's (%d); use a file made by this version",
             db->path, (long long)version, SL_RULESDB_SCHEMA);
    return SL_RULESDB_ECORRUPT;
}

int sl_rulesdb_open(const char *path, bool create, sl_rulesdb **out, char *err, size_t err_len)
{
    sl_rulesdb *db = calloc(1, sizeof(*db));
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc;

    *out = NULL;
    if (db == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    snprintf(db->path, sizeof(db->path), "%s", path);
    rc = sqlite3_open_v2(path, &db->db, flags, NULL);
    if (rc != SQLITE_OK) {
        rc = db_error(db, rc, "opening");
        if ((sqlite3_errcode(db->db) & 0xff) == SQLITE_CANTOPEN)
            snprintf(db->msg, sizeof(db->msg), "%s: cannot open the rules database%s", path,
                     create ? "" : " (does it exist?)");
    } else {
        sqlite3_busy_timeout(db->db, SL_RULESDB_BUSY_MS);
        rc = check_schema(db, create);
    }
    if (rc != SL_OK) {
        snprintf(err, err_len, "%s", db->msg);
        sl_rulesdb_close(db);
        return rc;
    }
    *out = db;
    return SL_OK;
}

void sl_rulesdb_close(sl_rulesdb *db)
{
    if (db == NULL)
        return;
    sqlite3_close(db->db);
    free(db);
}

const char *sl_rulesdb_errmsg(const sl_rulesdb *db)
{
    return db->msg;
}

int sl_rulesdb_validate(const char *yaml, size_t len, const char *origin, sl_rules_builder *diags,
                        char **domain)
{
    sl_rules_builder *b = diags ? diags : sl_rules_builder_new();
    const char *names[2];
    size_t n;
    int rc;

    *domain = NULL;
    if (b == NULL)
        return SL_ENOMEM;
    rc = sl_rules_builder_add_yaml(b, yaml, len, origin, SL_SRC_DB);
    n = rc == SL_OK ? sl__rules_builder_domains(b, names, 2) : 0;
    if (rc == SL_OK && n != 1) {
        sl__rules_builder_diag(b, origin, 1, 1,
                               "a database rule holds exactly one domain; split the text into "
                               "one rule per domain");
        rc = SL_EPARSE;
    }
    if (rc == SL_OK) {
        *domain = sl__strdup(names[0]);
        rc = *domain ? SL_OK : SL_ENOMEM;
    }
    if (diags == NULL)
        sl_rules_builder_free(b);
    return rc;
}

static bool valid_id(const char *id)
{
    size_t n = strlen(id);

    if (n == 0 || n > SL_RULESDB_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

static int exec_row(sl_rulesdb *db, const char *sql, const char *id, const char *domain,
                    const char *yaml, size_t len, const char *doing)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return db_error(db, rc, doing);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (domain != NULL) {
        sqlite3_bind_text(st, 2, domain, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, yaml, (int)len, SQLITE_STATIC);
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        snprintf(db->msg, sizeof(db->msg), "rule '%s' already exists; use replace to change it",
                 id);
        return SL_RULESDB_EEXIST;
    }
    if (rc != SQLITE_DONE)
        return db_error(db, rc, doing);
    return SL_OK;
}

int sl_rulesdb_put(sl_rulesdb *db, const char *id, const char *yaml, size_t len, bool replace,
                   sl_rules_builder *diags)
{
    static const char ins[] = "INSERT INTO rules(id, domain, yaml, updated_ms) VALUES "
                              "(?1, ?2, ?3, CAST(strftime('%s','now') AS INTEGER) * 1000)";
    static const char rep[] = "INSERT OR REPLACE INTO rules(id, domain, yaml, updated_ms) VALUES "
                              "(?1, ?2, ?3, CAST(strftime('%s','now') AS INTEGER) * 1000)";
    char origin[SL_RULESDB_ID_MAX + 8];
    char *domain = NULL;
    int rc;

    if (!valid_id(id)) {
        snprintf(db->msg, sizeof(db->msg),
                 "invalid rule id '%.140s': use 1 to %d of letters, digits, '.', '_', ':', '-'", id,
                 SL_RULESDB_ID_MAX);
        return SL_EINVAL;
    }
    if (len > INT32_MAX) {
        snprintf(db->msg, sizeof(db->msg), "rule '%s' is too large", id);
        return SL_ETOOBIG;
    }
    snprintf(origin, sizeof(origin), "db:%s", id);
    rc = sl_rulesdb_validate(yaml, len, origin, diags, &domain);
    if (rc != SL_OK) {
        snprintf(db->msg, sizeof(db->msg), "rule '%s' is not valid rules YAML", id);
        return rc;
    }
    rc = exec_row(db, replace ? rep : ins, id, domain, yaml, len, "storing the rule");
    free(domain);
    return rc;
}

int sl_rulesdb_delete(sl_rulesdb *db, const char *id)
{
    int rc =
        exec_row(db, "DELETE FROM rules WHERE id = ?1", id, NULL, NULL, 0, "deleting the rule");

    if (rc == SL_OK && sqlite3_changes(db->db) == 0) {
        snprintf(db->msg, sizeof(db->msg), "no rule with id '%.140s'", id);
        return SL_ENOENT;
    }
    return rc;
}

int sl_rulesdb_list(sl_rulesdb *db, int (*fn)(void *arg, const struct sl_rulesdb_row *row),
                    void *arg)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        db->db, "SELECT id, domain, yaml, updated_ms FROM rules ORDER BY id", -1, &st, NULL);
    int stop = 0;

    if (rc != SQLITE_OK)
        return db_error(db, rc, "listing the rules");
    while (stop == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct sl_rulesdb_row row = {
            .id = (const char *)sqlite3_column_text(st, 0),
            .domain = (const char *)sqlite3_column_text(st, 1),
            .yaml = (const char *)sqlite3_column_text(st, 2),
            .updated_ms = sqlite3_column_int64(st, 3),
        };
        if (row.id == NULL || row.domain == NULL || row.yaml == NULL)
            continue;
        stop = fn(arg, &row);
    }
    sqlite3_finalize(st);
    if (stop != 0)
        return stop;
    return rc == SQLITE_DONE ? SL_OK : db_error(db, rc, "listing the rules");
}

/* Rows read into memory first, so that a read error adds nothing. */
struct rows {
    char **id;
    char **yaml;
    size_t n;
    size_t cap;
};

static int collect(void *arg, const struct sl_rulesdb_row *row)
{
    struct rows *r = arg;

    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        char **id = realloc(r->id, cap * sizeof(*id));
        if (id != NULL)
            r->id = id;
        char **yaml = realloc(r->yaml, cap * sizeof(*yaml));
        if (yaml != NULL)
            r->yaml = yaml;
        if (id == NULL || yaml == NULL)
            return SL_ENOMEM;
        r->cap = cap;
    }
    r->id[r->n] = sl__strdup(row->id);
    r->yaml[r->n] = sl__strdup(row->yaml);
    if (r->id[r->n] == NULL || r->yaml[r->n] == NULL) {
        free(r->id[r->n]);
        free(r->yaml[r->n]);
        return SL_ENOMEM;
    }
    r->n++;
    return 0;
}

int sl_rulesdb_load(sl_rulesdb *db, sl_rules_builder *b)
{
    struct rows r = {0};
    int rc = sl_rulesdb_list(db, collect, &r);

    for (size_t i = 0; i < r.n; i++) {
        char origin[SL_RULESDB_ID_MAX + 8];
        snprintf(origin, sizeof(origin), "db:%s", r.id[i]);
        if (rc == SL_OK) {
            int e = sl_rules_builder_add_yaml(b, r.yaml[i], strlen(r.yaml[i]), origin, SL_SRC_DB);
            if (e != SL_OK && e != SL_EPARSE)
                rc = e;
            else if (e == SL_EPARSE)
                snprintf(db->msg, sizeof(db->msg), "a stored rule no longer validates (%s)",
                         origin);
        }
        free(r.id[i]);
        free(r.yaml[i]);
    }
    free(r.id);
    free(r.yaml);
    if (rc == SL_OK && sl_rules_builder_ndiags(b) > 0)
        return SL_EPARSE;
    return rc;
}
