/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin.c - the admin room's route table and its JSON answers. The
 * endpoints themselves are in admin_rules.c, admin_config.c,
 * admin_ks.c, admin_stats.c and admin_ui.c (the dashboard); the router and the gate are the HTTP
 * room's.
 */
#include <stdio.h>
#include <string.h>

#include <http_parser.h>

#include "admin.h"
#include "http_json.h"

const struct sl__http_route sl__admin_routes[] = {
    {HTTP_GET, "/v1/config", sl__admin_config, false, true, false},
    {HTTP_GET, "/rlconfig", sl__admin_rlconfig, false, true, false},
    {HTTP_GET, "/v1/killswitch", sl__admin_ks_list, false, true, false},
    {HTTP_PUT, "/v1/killswitch", sl__admin_ks_set, false, true, false},
    {HTTP_GET, "/v1/rules", sl__admin_rules_list, false, true, false},
    {HTTP_POST, "/v1/rules", sl__admin_rules_add, false, true, false},
    {HTTP_PUT, "/v1/rules/", sl__admin_rules_put, true, true, false},
    {HTTP_DELETE, "/v1/rules/", sl__admin_rules_delete, true, true, false},
    {HTTP_GET, "/v1/stats", sl__admin_stats, false, true, false},
    /* the page itself carries no data: the admin listener, no token (admin_ui.c) */
    {HTTP_GET, "/ui", sl__admin_ui, true, false, true},
    {0, NULL, NULL, false, false, false},
};

void sl__admin_send_json(struct sl__conn *c, int64_t slot, bool keep_alive, int status, cJSON *doc)
{
    static const char oom[] = "{\"error\":\"out of memory\"}";
    char *text = doc != NULL ? cJSON_PrintUnformatted(doc) : NULL;

    if (text == NULL)
        sl__h1_respond(c, slot, keep_alive, 500, NULL, 0, oom, sizeof(oom) - 1);
    else
        sl__h1_respond(c, slot, keep_alive, status, NULL, 0, text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(doc);
}

cJSON *sl__admin_body(struct sl__conn *c, const struct sl__h1_req *r)
{
    const char *bad = NULL;
    cJSON *doc = sl__json_parse_strict(r->body.p, r->body.len, &bad);
    char why[96];

    if (doc == NULL) {
        snprintf(why, sizeof(why), "body: %s", bad);
        sl__admin_send_error(c, -1, r->keep_alive, 400, why);
    }
    return doc;
}

void sl__admin_send_error(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                          const char *why)
{
    cJSON *doc = cJSON_CreateObject();

    cJSON_AddStringToObject(doc, "error", why);
    sl__admin_send_json(c, slot, keep_alive, status, doc);
}
