/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_int.h - what the http_json*.c files share (internal to them):
 * parsing into an arena. Nothing outside those files
 * includes it; their public face is http_json.h.
 */
#ifndef SL_SERVER_HTTP_JSON_INT_H
#define SL_SERVER_HTTP_JSON_INT_H

#include "envoy.h"
#include "http_json.h"

/* Parse body[0..len) strictly (sl__json_parse_strict) with allocations
 * from `a` (NULL: malloc). NULL with *why when it is refused. */
struct cJSON *sl__json_parse_in(struct sl__json_arena *a, const char *body, size_t len,
                                const char **why);
/* Free a document parsed by sl__json_parse_in() and empty `a`. */
void sl__json_delete_in(struct sl__json_arena *a, struct cJSON *root);

#endif /* SL_SERVER_HTTP_JSON_INT_H */
