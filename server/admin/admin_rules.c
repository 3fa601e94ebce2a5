/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin_rules.c - the rules database through the admin API: list (GET
 * /v1/rules), add (POST /v1/rules {"id", "yaml"}), replace (PUT
 * /v1/rules/{id} {"yaml"}) and delete (DELETE /v1/rules/{id}). A change is
 * validated, stored, published to the other nodes when the store shares
 * rules, and applied at once by a reload.
 *
 * The handler only parses, on the worker's loop; the work (SQLite, which
 * may wait up to its busy timeout for a lock, the publishing, which may
 * wait for Redis, and the reload) runs on libuv's work queue, and the
 * answer goes out through the reply slot reserved for it when the work is
 * done. Meanwhile the worker goes on serving its other connections, and
 * pipelined requests on this one keep their order. Admin changes and
 * reloads are serialised by the server's reload lock, so the last change
 * stored is the one that serves. One write's work is capped: a rule's YAML
 * (413 beyond RULE_YAML_MAX) and its descriptors (400 beyond
 * RULE_DESCRIPTORS_MAX, or none at all). It does not authenticate anyone: the router puts
 * these endpoints behind the gate.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "conn.h"
#include "log.h"
#include "rules_load.h"
#include "rulesdb.h"
#include "server.h"
#include "stores.h"
#include "worker-t.h"
#include "xalloc.h"

/* What one rule written through the API may hold: each write reloads every
 * rule (files and database), so one request's work stays bounded. Larger
 * rule sets belong in rules files, or split into several rules. */
#define RULE_YAML_MAX        (256u << 10) /* bytes of YAML: 413 beyond */
#define RULE_DESCRIPTORS_MAX 4096u        /* descriptors at every level: 400 beyond */

enum job_kind { JOB_LIST, JOB_ADD, JOB_PUT, JOB_DELETE };

/* One admin request on the work queue. Its fields are written by the loop
 * thread before uv_queue_work and after the work, and by the work in
 * between (libuv orders the three). */
struct job {
    uv_work_t work;
    struct sl__conn *c;
    struct sl__server *srv;
    int64_t slot;
    bool keep_alive;
    enum job_kind kind;
    char *id;   /* malloc'd; NULL for list */
    char *yaml; /* malloc'd; NULL for list and delete */
    /* the answer, made by the work */
    int status;
    cJSON *doc;
};

static void set_answer(struct job *j, int status, cJSON *doc)
{
    j->status = status;
    j->doc = doc;
}

static void set_error(struct job *j, int status, const char *why)
{
    cJSON *doc = cJSON_CreateObject();

    cJSON_AddStringToObject(doc, "error", why);
    set_answer(j, status, doc);
}

/* ------------------------------------------------------------ the work */

static sl_rulesdb *open_db(struct job *j, bool create)
{
    const char *path = j->srv->cfg.rules_db;
    char err[256];
    sl_rulesdb *db = NULL;

    if (path == NULL) {
        set_error(j, 409, "no rules database configured (rules.database)");
        return NULL;
    }
    if (sl_rulesdb_open(path, create, &db, err, sizeof(err)) != SL_OK) {
        set_error(j, 500, err);
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

static void list(struct job *j)
{
    sl_rulesdb *db = open_db(j, true);
    cJSON *root;

    if (db == NULL)
        return;
    root = cJSON_CreateObject();
    if (sl_rulesdb_list(db, add_row, cJSON_AddArrayToObject(root, "rules")) != SL_OK) {
        cJSON_Delete(root);
        set_error(j, 500, sl_rulesdb_errmsg(db));
    } else {
        set_answer(j, 200, root);
    }
    sl_rulesdb_close(db);
}

/* With a store that shares rules, hand the change to the other nodes
 * ("published" in the answer). Without it the rule stays local (and
 * serves). */
static void publish(struct job *j, cJSON *ok)
{
    int r;

    if (!sl__server_rules_shared(j->srv))
        return;
    r = sl__server_rules_publish(j->srv, j->id, j->yaml);
    cJSON_AddBoolToObject(ok, "published", r == SL_OK);
    if (r != SL_OK)
        sl__warn("rules sync: rule %s changed here only: the store did not take it (%s)", j->id,
                 sl_strerror(r));
}

/* Publish the database's new state; the answer says whether it applies. */
static void apply(struct job *j, cJSON *ok)
{
    publish(j, ok);
    if (sl__server_reload_locked(j->srv, "admin API") != SL_OK) {
        cJSON_Delete(ok);
        set_error(j, 500,
                  "stored, but the reload failed (see the log); the previous rules keep "
                  "serving");
        return;
    }
    cJSON_AddBoolToObject(ok, "applied", true);
    set_answer(j, 200, ok);
}

/* A 400 listing every diagnostic of a rejected rule. */
static void set_diags(struct job *j, sl_rules_builder *b)
{
    cJSON *doc = cJSON_CreateObject(), *a;

    cJSON_AddStringToObject(doc, "error", "the rule does not validate");
    a = cJSON_AddArrayToObject(doc, "diagnostics");
    for (size_t i = 0; b != NULL && i < sl_rules_builder_ndiags(b); i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(sl_rules_builder_diag(b, i)));
    set_answer(j, 400, doc);
}

/* More descriptors than one rule may hold, or a domain of none (which
 * every reload would refuse, unless it denies what is unmatched)? Then a
 * 400 is set. An invalid rule passes here: storing it diagnoses it. */
static bool refused_size(struct job *j)
{
    size_t n = 0;
    char empty[128], why[320];

    if (sl__rules_text_descriptors(j->yaml, strlen(j->yaml), &n, empty, sizeof(empty)) != SL_OK)
        return false;
    if (empty[0] != '\0' && !j->srv->cfg.rules_allow_empty) {
        snprintf(why, sizeof(why),
                 "the rule's domain '%.100s' has no descriptors (a domain without descriptors "
                 "is refused by every reload unless rules.allow_empty, or on_unmatched: deny)",
                 empty);
        set_error(j, 400, why);
        return true;
    }
    if (n <= RULE_DESCRIPTORS_MAX)
        return false;
    snprintf(why, sizeof(why),
             "the rule has %zu descriptors, more than %u: split it into several rules, or put it "
             "in a rules file",
             n, RULE_DESCRIPTORS_MAX);
    set_error(j, 400, why);
    return true;
}

static void put(struct job *j)
{
    sl_rules_builder *diags = sl_rules_builder_new();
    sl_rulesdb *db = NULL;
    int rc;

    if (refused_size(j))
        goto out;
    db = open_db(j, true);
    if (db == NULL)
        goto out;
    rc = sl_rulesdb_put(db, j->id, j->yaml, strlen(j->yaml), j->kind == JOB_PUT, diags);
    if (rc == SL_EPARSE) {
        set_diags(j, diags);
    } else if (rc == SL_RULESDB_EEXIST) {
        set_error(j, 409, "a rule with this id exists; PUT /v1/rules/{id} replaces it");
    } else if (rc != SL_OK) {
        set_error(j, rc == SL_EINVAL ? 400 : 500, sl_rulesdb_errmsg(db));
    } else {
        cJSON *ok = cJSON_CreateObject();
        cJSON_AddStringToObject(ok, "id", j->id);
        apply(j, ok);
    }
out:
    sl_rulesdb_close(db);
    sl_rules_builder_free(diags);
}

static void del(struct job *j)
{
    sl_rulesdb *db = open_db(j, false);
    int rc;

    if (db == NULL)
        return;
    rc = sl_rulesdb_delete(db, j->id);
    if (rc == SL_ENOENT) {
        set_error(j, 404, "no rule with this id");
    } else if (rc != SL_OK) {
        set_error(j, 500, sl_rulesdb_errmsg(db));
    } else {
        cJSON *ok = cJSON_CreateObject();
        cJSON_AddStringToObject(ok, "deleted", j->id);
        apply(j, ok);
    }
    sl_rulesdb_close(db);
}

/* On the work queue: one change at a time, and no reload in between. */
static void run(uv_work_t *w)
{
    struct job *j = w->data;

    sl__server_reload_lock(j->srv);
    switch (j->kind) {
    case JOB_LIST:
        list(j);
        break;
    case JOB_ADD:
    case JOB_PUT:
        put(j);
        break;
    case JOB_DELETE:
        del(j);
        break;
    }
    sl__server_reload_unlock(j->srv);
}

/* Back on the loop: answer into the slot reserved for it. */
static void done(uv_work_t *w, int status)
{
    struct job *j = w->data;

    if (status != 0 && j->doc == NULL)
        set_error(j, 503, "the admin request was cancelled (the server is stopping)");
    sl__admin_send_json(j->c, j->slot, j->keep_alive, j->status, j->doc);
    free(j->id);
    free(j->yaml);
    free(j);
}

/* Queue `kind` for rule `id` (may be NULL) with `yaml` (copied; may be NULL). */
static void queue(struct sl__conn *c, const struct sl__h1_req *r, enum job_kind kind,
                  const char *id, const char *yaml)
{
    struct job *j;
    int64_t slot = sl__conn_slot_reserve(c);

    if (slot < 0) {
        sl__admin_send_error(c, -1, r->keep_alive, 503,
                             "too many requests in flight on this connection");
        return;
    }
    j = sl__xzalloc(sizeof(*j));
    j->work.data = j;
    j->c = c;
    j->srv = c->w->srv;
    j->slot = slot;
    j->keep_alive = r->keep_alive;
    j->kind = kind;
    if (id != NULL)
        j->id = sl__xstrndup(id, strlen(id));
    if (yaml != NULL)
        j->yaml = sl__xstrndup(yaml, strlen(yaml));
    if (uv_queue_work(&c->w->loop, &j->work, run, done) != 0) {
        set_error(j, 503, "the admin request could not be queued");
        done(&j->work, 0);
    }
}

/* ------------------------------------------------------------ the endpoints */

void sl__admin_rules_list(struct sl__conn *c, const struct sl__h1_req *r)
{
    queue(c, r, JOB_LIST, NULL, NULL);
}

/* The string member `name` of a JSON body; NULL with a 400 sent. */
static const char *body_string(struct sl__conn *c, const struct sl__h1_req *r, cJSON *doc,
                               const char *name)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, name);

    if (!cJSON_IsString(v)) {
        char why[96];
        snprintf(why, sizeof(why), "the body must be a JSON object with a string \"%s\"", name);
        sl__admin_send_error(c, -1, r->keep_alive, 400, why);
        return NULL;
    }
    return v->valuestring;
}

/* The "yaml" member of a rule write; NULL with a 400 or 413 sent. */
static const char *body_yaml(struct sl__conn *c, const struct sl__h1_req *r, cJSON *doc)
{
    const char *yaml = body_string(c, r, doc, "yaml");
    char why[128];

    if (yaml == NULL || strlen(yaml) <= RULE_YAML_MAX)
        return yaml;
    snprintf(why, sizeof(why),
             "the rule's yaml is larger than %u bytes: split it into several rules, or put it in "
             "a rules file",
             RULE_YAML_MAX);
    sl__admin_send_error(c, -1, r->keep_alive, 413, why);
    return NULL;
}

void sl__admin_rules_add(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc = sl__admin_body(c, r);
    const char *id = doc != NULL ? body_string(c, r, doc, "id") : NULL, *yaml;

    if (id != NULL && (yaml = body_yaml(c, r, doc)) != NULL)
        queue(c, r, JOB_ADD, id, yaml);
    cJSON_Delete(doc);
}

/* The {id} of /v1/rules/{id}, NUL-terminated in buf; NULL with a 400 sent. */
static const char *path_id(struct sl__conn *c, const struct sl__h1_req *r, char *buf, size_t cap)
{
    size_t pre = strlen("/v1/rules/"), n = r->path.len - pre;

    if (n == 0 || n >= cap) {
        sl__admin_send_error(c, -1, r->keep_alive, 400, "give the rule id: /v1/rules/{id}");
        return NULL;
    }
    memcpy(buf, r->path.p + pre, n);
    buf[n] = '\0';
    return buf;
}

void sl__admin_rules_put(struct sl__conn *c, const struct sl__h1_req *r)
{
    char idbuf[SL_RULESDB_ID_MAX + 1];
    const char *id = path_id(c, r, idbuf, sizeof(idbuf)), *yaml;
    cJSON *doc;

    if (id == NULL)
        return;
    doc = sl__admin_body(c, r);
    if (doc != NULL && (yaml = body_yaml(c, r, doc)) != NULL)
        queue(c, r, JOB_PUT, id, yaml);
    cJSON_Delete(doc);
}

void sl__admin_rules_delete(struct sl__conn *c, const struct sl__h1_req *r)
{
    char idbuf[SL_RULESDB_ID_MAX + 1];
    const char *id = path_id(c, r, idbuf, sizeof(idbuf));

    if (id != NULL)
        queue(c, r, JOB_DELETE, id, NULL);
}
