/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin_ks.c - the kill-switch endpoints of the admin API:
 *   GET /v1/killswitch   -> {"switches":[{"domain":"api","mode":"shadow"}, ...]}
 *   PUT /v1/killswitch   {"domain": "api" | "*", "mode": "enforce"|"shadow"|"off"}
 * A change applies to the next check on every worker (killswitch.c). Not
 * persisted: a restart enforces every domain again. Admin-only (the router puts it
 * behind the gate); not on the hot path (cJSON allocates).
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "conn.h"
#include "admin.h"
#include "killswitch.h"
#include "log.h"
#include "server-t.h"
#include "worker-t.h"

static void add_switch(void *arg, const char *domain, enum sl__ks_mode mode)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "domain", domain);
    cJSON_AddStringToObject(o, "mode", sl__ks_mode_name(mode));
    cJSON_AddItemToArray(arg, o);
}

void sl__admin_ks_list(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc = cJSON_CreateObject();

    sl__ks_list(&c->w->srv->ks, add_switch, cJSON_AddArrayToObject(doc, "switches"));
    sl__admin_send_json(c, -1, r->keep_alive, 200, doc);
}

void sl__admin_ks_set(struct sl__conn *c, const struct sl__h1_req *r)
{
    cJSON *doc = sl__admin_body(c, r);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "domain");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "mode");
    enum sl__ks_mode mode;
    int rc;

    if (doc == NULL)
        return;
    if (!cJSON_IsString(d) || !cJSON_IsString(m) || sl__ks_mode_parse(m->valuestring, &mode)) {
        sl__admin_send_error(
            c, -1, r->keep_alive, 400,
            "expected {\"domain\": NAME or \"*\", \"mode\": \"enforce\", \"shadow\" or "
            "\"off\"}");
        goto out;
    }
    rc = sl__ks_set(&c->w->srv->ks, (struct sl_str){d->valuestring, strlen(d->valuestring)}, mode);
    if (rc == SL_EFULL) {
        sl__admin_send_error(c, -1, r->keep_alive, 409,
                             "too many domains switched (64); set some back to enforce");
    } else if (rc != SL_OK) {
        sl__admin_send_error(c, -1, r->keep_alive, 400, "domain must be 1 to 128 bytes, or \"*\"");
    } else {
        cJSON *ok = cJSON_CreateObject();
        sl__info("killswitch.changed", "killswitch: domain '%s' is now %s", d->valuestring,
                 sl__ks_mode_name(mode));
        cJSON_AddStringToObject(ok, "domain", d->valuestring);
        cJSON_AddStringToObject(ok, "mode", sl__ks_mode_name(mode));
        sl__admin_send_json(c, -1, r->keep_alive, 200, ok);
    }
out:
    cJSON_Delete(doc);
}
