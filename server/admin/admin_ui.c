/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin_ui.c - the dashboard: GET /ui (index.html), /ui/app.js and
 * /ui/style.css, written in server/admin/ui/ and embedded in the binary at
 * build time (ui/embed.cmake), so the page needs no file, CDN or network.
 *
 * Served on the admin listener only, without a token: the page holds no
 * data. It asks the operator for the admin token, keeps it in
 * sessionStorage and sends it as Authorization: Bearer on its own
 * requests to the admin API (GET /v1/stats and the actions), so no cookie
 * is ever involved. The answers forbid framing and any script or style
 * from elsewhere (Content-Security-Policy).
 */
#include <string.h>

#include <http_parser.h>

#include "admin.h"
#include "buf.h"
#include "conn.h"
#include "http_gate.h"

extern const char sl__ui_index_html[], sl__ui_app_js[], sl__ui_style_css[];
extern const size_t sl__ui_index_html_len, sl__ui_app_js_len, sl__ui_style_css_len;

#define COMMON                                                                                     \
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "           \
    "connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; "                \
    "form-action 'none'\r\n"                                                                       \
    "X-Content-Type-Options: nosniff\r\n"                                                          \
    "Referrer-Policy: no-referrer\r\n"                                                             \
    "Cache-Control: no-cache\r\n"

static const struct asset {
    const char *path;
    const char *headers;
    const char *body;
    const size_t *len;
} assets[] = {
    {"/ui", "Content-Type: text/html; charset=utf-8\r\n" COMMON, sl__ui_index_html,
     &sl__ui_index_html_len},
    {"/ui/", "Content-Type: text/html; charset=utf-8\r\n" COMMON, sl__ui_index_html,
     &sl__ui_index_html_len},
    {"/ui/app.js", "Content-Type: text/javascript; charset=utf-8\r\n" COMMON, sl__ui_app_js,
     &sl__ui_app_js_len},
    {"/ui/style.css", "Content-Type: text/css; charset=utf-8\r\n" COMMON, sl__ui_style_css,
     &sl__ui_style_css_len},
};

void sl__admin_ui(struct sl__conn *c, const struct sl__h1_req *r)
{
    static const char nothere[] = "{\"error\":\"no such endpoint\"}";

    if (sl__gate_listener(c)) {
        for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++) {
            const struct asset *a = &assets[i];
            if (r->path.len == strlen(a->path) && memcmp(r->path.p, a->path, r->path.len) == 0) {
                const struct sl__buf *b = sl__h1_build(r->keep_alive, 200, a->headers,
                                                       strlen(a->headers), a->body, *a->len);
                /* HEAD: the same head (its Content-Length too), no body */
                sl__conn_write(c, b->p, r->method == HTTP_HEAD ? b->len - *a->len : b->len);
                return;
            }
        }
    }
    sl__h1_respond(c, -1, r->keep_alive, 404, NULL, 0, nothere,
                   r->method == HTTP_HEAD ? 0 : sizeof(nothere) - 1);
}
