/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin.h - the admin room (internal): the operator endpoints of the HTTP
 * API that change or show the server itself - the rules database
 * (GET/POST /v1/rules, PUT/DELETE /v1/rules/{id}), the effective
 * configuration (GET /v1/config) and the kill switches (GET/PUT
 * /v1/killswitch). Every one is behind the admin gate (http_gate.h).
 *
 * The rules endpoints do their work (SQLite, the reload, publishing to the
 * other nodes) on libuv's work queue and answer through a reply slot when
 * it is done, so a worker's checks are never held up by an admin write.
 */
#ifndef SL_SERVER_ADMIN_H
#define SL_SERVER_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "http1.h"
#include "http_route.h"

struct sl__conn;

/* The room's endpoints, ended by a row whose path is NULL. */
extern const struct sl__http_route sl__admin_routes[];

void sl__admin_rules_list(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_rules_add(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_rules_put(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_rules_delete(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_config(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_rlconfig(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_ks_list(struct sl__conn *c, const struct sl__h1_req *r);
void sl__admin_ks_set(struct sl__conn *c, const struct sl__h1_req *r);

/* Answer with a cJSON document (consumed; NULL answers 500), at once
 * (slot -1) or into reply slot `slot`. */
void sl__admin_send_json(struct sl__conn *c, int64_t slot, bool keep_alive, int status, cJSON *doc);
/* The request's body as JSON, read strictly (sl__json_parse_strict); NULL
 * with a 400 sent when it is not one JSON value. Free with cJSON_Delete. */
cJSON *sl__admin_body(struct sl__conn *c, const struct sl__h1_req *r);

/* Answer {"error": why}. */
void sl__admin_send_error(struct sl__conn *c, int64_t slot, bool keep_alive, int status,
                          const char *why);

#endif /* SL_SERVER_ADMIN_H */
