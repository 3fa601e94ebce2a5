/*
 * admin_config.c - GET /v1/config: the configuration in force as JSON
 * (secrets left out: only whether a token is required). Read-only, on the
 * loop: it reads memory only.
 */
#include <cjson/cJSON.h>

#include "admin.h"
#include "conn.h"
#include "proto.h"
#include "server-t.h"
#include "stores.h"
#include "worker-t.h"

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
            if (l->protos & sl__proto_bit(sl__protos[k]))
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

void sl__admin_config(struct sl__conn *c, const struct sl__h1_req *r)
{
    const struct sl__server *srv = c->w->srv;
    const struct sl__config *cfg = &srv->cfg;
    cJSON *root = cJSON_CreateObject(), *o;

    if (root == NULL) {
        sl__admin_send_json(c, -1, r->keep_alive, 500, NULL);
        return;
    }
    cJSON_AddStringToObject(root, "version", SLUICE_VERSION);
    if (cfg->path != NULL)
        cJSON_AddStringToObject(root, "config_file", cfg->path);
    add_listeners(root, srv);
    cJSON_AddNumberToObject(root, "workers", srv->n_workers);
    add_rules(root, cfg);
    o = cJSON_AddObjectToObject(root, "store");
    cJSON_AddStringToObject(o, "type", sl__server_store_type(srv));
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
    sl__admin_send_json(c, -1, r->keep_alive, 200, root);
}
