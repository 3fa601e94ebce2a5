/*
 * http_admin.c - operator endpoints: the rules database through HTTP
 * (list, add, replace, delete; a change is validated, stored, and applied
 * at once by a reload) and the effective configuration as JSON.
 *
 * These are not on the hot path: they allocate (cJSON trees) and block their
 * worker for the SQLite write and the reload (milliseconds), which stalls
 * that worker's other connections meanwhile. Two reloads racing (this one
 * and a file-change reload) each publish a complete snapshot; the later
 * publish wins until the next reload. It does not authenticate anyone:
 * http_api.c routes these through the gate (http_gate.c) first.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <http_parser.h>

#include "conn.h"
#include "http_admin.h"
#include "http_headers.h"
#include "proto.h"
#include "log.h"
#include "rules_load.h"
#include "rules_sync.h"
#include "server.h"
#include "rulesdb.h"
#include "worker-t.h"

/* Answer with a cJSON document (consumed). */
static void send_json(struct sl__conn *c, const struct sl__h1_req *r, int status, cJSON *doc)
{
    char *text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;

    if (text == NULL)
        sl__h1_respond(c, -1, r->keep_alive, 500, NULL, 0, "{\"error\":\"out of memory\"}", 25);
    else
        sl__h1_respond(c, -1, r->keep_alive, status, NULL, 0, text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(doc);
}

static void send_error(struct sl__conn *c, const struct sl__h1_req *r, int status, const char *why)
{
    cJSON *doc = cJSON_CreateObject();

    cJSON_AddStringToObject(doc, "error", why);
    send_json(c, r, status, doc);
}

/* ------------------------------------------------------------ config */

static void add_listeners(cJSON *root, const struct sl__server *srv)
{
    cJSON *a = cJSON_AddArrayToObject(root, "listeners");

    for (size_t i = 0; i < srv->cfg.n_listeners; i++) {
        const struct sl__listener *l = &srv->cfg.listeners[i];
        cJSON *o = cJSON_CreateObject(), *p = cJSON_AddArrayToObject(o, "protocols");
        cJSON_AddStringToObject(o, "address", l->address);
        cJSON_AddNumberToObject(o, "port", srv->ports[i] ? srv->ports[i] : l->port);
        cJSON_AddBoolToObject(o, "admin", l->admin);
        cJSON_AddBoolToObject(o, "serves_admin", l->admin_paths);
        for (size_t k = 0; sl__protos[k] != NULL; k++) {
            if (l->protos & sl__protos[k]->bit)
                cJSON_AddItemToArray(p, cJSON_CreateString(sl__protos[k]->name));
        }
        cJSON_AddItemToArray(a, o);
    }
}

static void add_rules(cJSON *root, const struct sl__config *cfg)
{
    cJSON *o = cJSON_AddObjectToObject(root, "rules"), *f = cJSON_AddArrayToObject(o, "files");

    for (size_t i = 0; i < cfg->n_rules_files; i++)
        cJSON_AddItemToArray(f, cJSON_CreateString(cfg->rules_files[i]));
    if (cfg->rules_db != NULL)
        cJSON_AddStringToObject(o, "database", cfg->rules_db);
    else
        cJSON_AddNullToObject(o, "database");
    cJSON_AddBoolToObject(o, "watch", cfg->rules_watch);
    cJSON_AddNumberToObject(o, "debounce_ms", (double)cfg->rules_debounce_ms);
}

static void add_header_families(cJSON *o, unsigned mask)
{
    static const struct {
        unsigned bit;
        const char *name;
    } fam[] = {
        {SL__HDR_IETF, "ietf"}, {SL__HDR_X, "x-ratelimit"}, {SL__HDR_RETRY_AFTER, "retry-after"}};
    cJSON *a = cJSON_AddArrayToObject(o, "headers");

    for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
        if (mask & fam[i].bit)
            cJSON_AddItemToArray(a, cJSON_CreateString(fam[i].name));
}

void sl__http_config(struct sl__conn *c, const struct sl__h1_req *r)
{
    const struct sl__server *srv = c->w->srv;
    const struct sl__config *cfg = &srv->cfg;
    cJSON *root = cJSON_CreateObject(), *o;

    if (root == NULL) {
        send_json(c, r, 500, NULL);
        return;
    }
    cJSON_AddStringToObject(root, "version", SLUICE_VERSION);
    if (cfg->path != NULL)
        cJSON_AddStringToObject(root, "config_file", cfg->path);
    add_listeners(root, srv);
    cJSON_AddNumberToObject(root, "workers", srv->n_workers);
    add_rules(root, cfg);
    o = cJSON_AddObjectToObject(root, "store");
    cJSON_AddStringToObject(o, "type", cfg->store);
    cJSON_AddNumberToObject(o, "max_bytes", (double)cfg->store_max_bytes);
    cJSON_AddNumberToObject(o, "shards", cfg->store_shards);
    cJSON_AddStringToObject(o, "on_full", cfg->store_on_full == SL_ON_FULL_DENY ? "deny" : "evict");
    o = cJSON_AddObjectToObject(root, "server");
    cJSON_AddNumberToObject(o, "max_connections", cfg->max_connections);
    cJSON_AddNumberToObject(o, "max_frame_bytes", (double)cfg->max_frame_bytes);
    cJSON_AddNumberToObject(o, "idle_timeout_ms", (double)cfg->idle_timeout_ms);
    cJSON_AddNumberToObject(o, "read_timeout_ms", (double)cfg->read_timeout_ms);
    cJSON_AddNumberToObject(o, "shutdown_grace_ms", (double)cfg->shutdown_grace_ms);
    o = cJSON_AddObjectToObject(root, "http");
    add_header_families(o, cfg->http_headers);
    cJSON_AddNumberToObject(o, "max_delay_ms", (double)cfg->http_max_delay_ms);
    o = cJSON_AddObjectToObject(root, "admin");
    cJSON_AddBoolToObject(o, "token_required", cfg->admin_token != NULL);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(root, "metrics"), "max_series",
                            cfg->metrics_max_series);
    cJSON_AddBoolToObject(root, "test_clock", cfg->test_clock);
    send_json(c, r, 200, root);
}

/* ------------------------------------------------------------ rules */

static sl_rulesdb *open_db(struct sl__conn *c, const struct sl__h1_req *r, bool create)
{
    const char *path = c->w->srv->cfg.rules_db;
    char err[256];
    sl_rulesdb *db = NULL;

    if (path == NULL) {
        send_error(c, r, 409, "no rules database configured (rules.database)");
        return NULL;
    }
    if (sl_rulesdb_open(path, create, &db, err, sizeof(err)) != SL_OK) {
        send_error(c, r, 500, err);
        return NULL;
    }
    return db;
}

static int add_row(void *arg, const struct sl_rulesdb_row *row)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "id", row->id);
    cJSON_AddStringToObject(o, "domain", row->domain);
    cJSON_AddStringToObject(o, "yaml", row->yaml);
    cJSON_AddNumberToObject(o, "updated_ms", (double)row->updated_ms);
    cJSON_AddItemToArray(arg, o);
    return 0;
}

void sl__http_rules_list(struct sl__conn *c, const struct sl__h1_req *r)
{
    sl_rulesdb *db = open_db(c, r, true);
    cJSON *root, *rows;

    if (db == NULL)
        return;
    root = cJSON_CreateObject();
    rows = cJSON_AddArrayToObject(root, "rules");
    if (sl_rulesdb_list(db, add_row, rows) != SL_OK) {
        cJSON_Delete(root);
        send_error(c, r, 500, sl_rulesdb_errmsg(db));
    } else {
        send_json(c, r, 200, root);
    }
    sl_rulesdb_close(db);
}

/* Publish the database's new state; the answer says whether it applies. */
static void apply(struct sl__conn *c, const struct sl__h1_req *r, cJSON *ok)
{
    struct sl__server *srv = c->w->srv;

    if (sl__server_reload(srv, "admin API") != SL_OK) {
        cJSON_Delete(ok);
        send_error(c, r, 500,
                   "stored, but the reload failed (see the log); the previous "
                   "rules keep serving");
        return;
    }
    cJSON_AddBoolToObject(ok, "applied", true);
    send_json(c, r, 200, ok);
}

/* A 400 listing every diagnostic of a rejected rule. */
static void send_diags(struct sl__conn *c, const struct sl__h1_req *r, sl_rules_builder *b)
{
    cJSON *doc = cJSON_CreateObject(), *a;

    cJSON_AddStringToObject(doc, "error", "the rule does not validate");
    a = cJSON_AddArrayToObject(doc, "diagnostics");
    for (size_t i = 0; b != NULL && i < sl_rules_builder_ndiags(b); i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(sl_rules_builder_diag(b, i)));
    send_json(c, r, 400, doc);
}

/* With store.redis.rules_sync, store the change in Redis too and announce
 * it to every node ("published" in the answer). Blocks this worker for at
 * most a few timeouts: admin calls are rare, and the database write above
 * blocks the same way. Without Redis the rule stays local (and serves). */
static void publish(struct sl__conn *c, cJSON *ok, const char *id, const char *yaml)
{
    const struct sl__config *cfg = &c->w->srv->cfg;
    struct sl__rsync_config rc;
    int r;

    if (strcmp(cfg->store, "redis") != 0 || !cfg->redis.rules_sync)
        return;
    r = sl__rsync_config_from_redis(&rc, &cfg->redis);
    if (r == SL_OK)
        r = sl__rsync_push(&rc, id, yaml, yaml != NULL ? strlen(yaml) : 0, NULL);
    cJSON_AddBoolToObject(ok, "published", r == SL_OK);
    if (r != SL_OK)
        sl__warn("rules sync: rule %s changed here only: Redis did not take it (%s)", id,
                 sl_strerror(r));
}

/* Store `yaml` as rule `id`, then apply. */
static void put_rule(struct sl__conn *c, const struct sl__h1_req *r, const char *id,
                     const char *yaml, bool replace)
{
    sl_rules_builder *diags = sl_rules_builder_new();
    sl_rulesdb *db = open_db(c, r, true);
    int rc;

    if (db == NULL)
        goto out;
    rc = sl_rulesdb_put(db, id, yaml, strlen(yaml), replace, diags);
    if (rc == SL_EPARSE) {
        send_diags(c, r, diags);
    } else if (rc == SL_RULESDB_EEXIST) {
        send_error(c, r, 409, "a rule with this id exists; PUT /v1/rules/{id} replaces it");
    } else if (rc != SL_OK) {
        send_error(c, r, rc == SL_EINVAL ? 400 : 500, sl_rulesdb_errmsg(db));
    } else {
        cJSON *ok = cJSON_CreateObject();
        cJSON_AddStringToObject(ok, "id", id);
        publish(c, ok, id, yaml);
        apply(c, r, ok);
    }
out:
    sl_rulesdb_close(db);
    sl_rules_builder_free(diags);
}

/* The string member `name` of a JSON body; NULL with a 400 sent. */
static const char *body_string(struct sl__conn *c, const struct sl__h1_req *r, cJSON *doc,
                               const char *name)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, name);

    if (!cJSON_IsString(v)) {
        char why[96];
        snprintf(why, sizeof(why), "the body must be a JSON object with a string \"%s\"", name);
        send_error(c, r, 400, why);
        return NULL;
    }
    return v->valuestring;
}

void sl__http_rules_add(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc = cJSON_ParseWithLength(r->body.p, r->body.len);
    const char *id = body_string(c, r, doc, "id"), *yaml;

    if (id != NULL && (yaml = body_string(c, r, doc, "yaml")) != NULL)
        put_rule(c, r, id, yaml, false);
    cJSON_Delete(doc);
}

/* The {id} of /v1/rules/{id}, NUL-terminated in buf; NULL with a 400 sent. */
static const char *path_id(struct sl__conn *c, const struct sl__h1_req *r, char *buf, size_t cap)
{
    size_t pre = strlen("/v1/rules/"), n = r->path.len - pre;

    if (n == 0 || n >= cap) {
        send_error(c, r, 400, "give the rule id: /v1/rules/{id}");
        return NULL;
    }
    memcpy(buf, r->path.p + pre, n);
    buf[n] = '\0';
    return buf;
}

void sl__http_rules_put(struct sl__conn *c, const struct sl__h1_req *r)
{
    char idbuf[SL_RULESDB_ID_MAX + 1];
    const char *id = path_id(c, r, idbuf, sizeof(idbuf)), *yaml;
    cJSON *doc;

    if (id == NULL)
        return;
    doc = cJSON_ParseWithLength(r->body.p, r->body.len);
    if ((yaml = body_string(c, r, doc, "yaml")) != NULL)
        put_rule(c, r, id, yaml, true);
    cJSON_Delete(doc);
}

void sl__http_rules_delete(struct sl__conn *c, const struct sl__h1_req *r)
{
    char idbuf[SL_RULESDB_ID_MAX + 1];
    const char *id = path_id(c, r, idbuf, sizeof(idbuf));
    sl_rulesdb *db;
    int rc;

    if (id == NULL || (db = open_db(c, r, false)) == NULL)
        return;
    rc = sl_rulesdb_delete(db, id);
    if (rc == SL_ENOENT) {
        send_error(c, r, 404, "no rule with this id");
    } else if (rc != SL_OK) {
        send_error(c, r, 500, sl_rulesdb_errmsg(db));
    } else {
        cJSON *ok = cJSON_CreateObject();
        cJSON_AddStringToObject(ok, "deleted", id);
        publish(c, ok, id, NULL);
        apply(c, r, ok);
    }
    sl_rulesdb_close(db);
}
