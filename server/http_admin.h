/*
 * http_admin.h - the operator endpoints of the HTTP API (internal):
 * the rules database (GET/POST /v1/rules, PUT/DELETE /v1/rules/{id}) and
 * the effective configuration (GET /v1/config), the kill switches
 * (http_ks.c). Routed by http_api.c, behind the admin gate (http_gate.h).
 */
#ifndef SL_SERVER_HTTP_ADMIN_H
#define SL_SERVER_HTTP_ADMIN_H

#include "http1.h"

struct sl__conn;

void sl__http_rules_list(struct sl__conn *c, const struct sl__h1_req *r);
void sl__http_rules_add(struct sl__conn *c, const struct sl__h1_req *r);
void sl__http_rules_put(struct sl__conn *c, const struct sl__h1_req *r);
void sl__http_rules_delete(struct sl__conn *c, const struct sl__h1_req *r);
void sl__http_config(struct sl__conn *c, const struct sl__h1_req *r);
/* Kill switches (http_ks.c): GET and PUT /v1/killswitch. */
void sl__http_ks_list(struct sl__conn *c, const struct sl__h1_req *r);
void sl__http_ks_set(struct sl__conn *c, const struct sl__h1_req *r);

#endif /* SL_SERVER_HTTP_ADMIN_H */
