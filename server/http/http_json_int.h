/*
 * http_json_int.h - what the http_json*.c files share (internal to them):
 * parsing into an arena and Envoy's unit table. Nothing outside those files
 * includes it; their public face is http_json.h.
 */
#ifndef SL_SERVER_HTTP_JSON_INT_H
#define SL_SERVER_HTTP_JSON_INT_H

#include "http_json.h"

/* Parse body[0..len) with allocations from `a` (NULL: malloc). NULL when
 * the text is not JSON. */
struct cJSON *sl__json_parse_in(struct sl__json_arena *a, const char *body, size_t len);
/* Free a document parsed by sl__json_parse_in() and empty `a`. */
void sl__json_delete_in(struct sl__json_arena *a, struct cJSON *root);

/* Envoy's RateLimitResponse.RateLimit.Unit, by enum number (MONTH is 30
 * days and YEAR 365, as envoyproxy/ratelimit counts them). */
struct sl__envoy_unit {
    const char *name;
    int64_t ns; /* 0 for UNKNOWN */
};
#define SL__ENVOY_N_UNITS 7
extern const struct sl__envoy_unit sl__envoy_units[SL__ENVOY_N_UNITS];

#endif /* SL_SERVER_HTTP_JSON_INT_H */
