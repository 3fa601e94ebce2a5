/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json.h - the JSON bodies of sluiced's HTTP API (internal):
 *
 *  - Envoy's RateLimitRequest / RateLimitResponse in proto3 JSON (POST /json),
 *  - the native check body of docs/contracts.md §Interfaces (POST /v1/check): a simulate
 *    input line without t_ms in, a simulate output line (+ "message" when
 *    denied) out.
 *
 * Parsing uses cJSON over a caller-supplied arena, so a request allocates
 * nothing once the arena is big enough (bigger documents fall back to
 * malloc and still work). Building writes straight into a caller buffer.
 * It does not check requests against limits and does not speak HTTP.
 *
 * Ownership: a parsed request (struct sl__json_req) borrows every string
 * from the document it parsed, which lives in the arena; both stay valid
 * until sl__json_req_release(). Threads: a struct sl__json_req and its
 * arena belong to one thread at a time; different threads may parse at once.
 */
#ifndef SL_SERVER_HTTP_JSON_H
#define SL_SERVER_HTTP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "envoy.h"
#include "sluice.h"

struct cJSON;

/* Bump allocator for one parse; the caller provides the bytes. */
struct sl__json_arena {
    char *base;   /* caller's storage, 16-byte aligned */
    size_t cap;   /* its size in bytes */
    size_t used;  /* bytes handed out by the current parse */
    size_t spill; /* allocations that did not fit and went to malloc */
};

/* Use base[0..cap) as the arena (base must be 16-byte aligned). */
void sl__json_arena_init(struct sl__json_arena *a, void *base, size_t cap);

/* A parsed check request: `req` is ready for sl_limiter_check() once the
 * caller sets req.now_ns. */
struct sl__json_req {
    struct sl_request req;
    struct sl_descriptor descs[SL_MAX_DESCRIPTORS];
    struct sl_entry entries[SL_MAX_DESCRIPTORS][SL_MAX_ENTRIES];
    struct sl__envoy_override overrides[SL_MAX_DESCRIPTORS];
    struct sl_limit override_limits[SL_MAX_DESCRIPTORS]; /* descs[i].limit points here */
    struct cJSON *root;                                  /* the document the strings point into */
    struct sl__json_arena *arena;                        /* where it lives; NULL: malloc */
    char error[160];                                     /* what is wrong, for the 400 body */
};

/*
 * Parse an Envoy RateLimitRequest (proto3 JSON: snake_case or lowerCamel
 * names, integers as numbers or strings) from body[0..len).
 * Request-level hits_addend 0 or absent means 1; a descriptor's hits_addend
 * is its own cost (0 peeks), absent means the request's. Unknown fields are
 * ignored. Returns SL_OK, or SL_EPARSE (not JSON), SL_EINVAL (wrong type,
 * missing or empty field), SL_ETOOBIG (more than SL_MAX_DESCRIPTORS
 * descriptors or SL_MAX_ENTRIES entries in one), SL_ERANGE (a number out of
 * its range), with r->error saying what and where. In every case the caller
 * calls sl__json_req_release(r) afterwards. `arena` may be NULL.
 */
int sl__json_parse_envoy(struct sl__json_req *r, struct sl__json_arena *arena, const char *body,
                         size_t len);

/*
 * Parse a native check body {"domain": D, "descriptors": [{K: V, ...}, ...],
 * "hits": N} (hits absent: 1; 0 peeks). Entries keep their order in the
 * object. Same results and error codes as sl__json_parse_envoy().
 */
int sl__json_parse_check(struct sl__json_req *r, struct sl__json_arena *arena, const char *body,
                         size_t len);

/*
 * Parse body[0..len) as exactly one JSON value: only whitespace after it,
 * and no object repeating a member name (cJSON would take the first, most
 * other readers the last). The document (free with cJSON_Delete), or NULL
 * with *why a static sentence for the 400. For every JSON body sluiced
 * reads, the admin endpoints' too.
 */
struct cJSON *sl__json_parse_strict(const char *body, size_t len, const char **why);

/* Free the parsed document and empty the arena for the next parse. */
void sl__json_req_release(struct sl__json_req *r);

/* How a limit is reported in Envoy's currentLimit: sl__envoy_unit_of()
 * (envoy.h) with the unit's name. */
void sl__json_envoy_unit(const struct sl_limit *l, const char **unit, uint32_t *per_unit);

/*
 * Write Envoy's RateLimitResponse for `res` into buf[0..cap):
 * {"overallCode": "OK"|"OVER_LIMIT", "statuses": [{"code",
 * "currentLimit": {"name", "requestsPerUnit", "unit"}, "limitRemaining",
 * "durationUntilReset": "Ns"}]}. A delay is OK. A status with no limit is
 * {"code": "OK"}. Seconds are rounded up. SL_OK with *len, or SL_ETOOBIG.
 */
int sl__json_build_envoy(const struct sl_result *res, char *buf, size_t cap, size_t *len);
/* The same from an answer already made (envoy.h's sl__envoy_answer, which
 * knows the configuration, the kill switch and the response headers), with
 * "responseHeadersToAdd": [{"key", "value"}] when it has headers. */
int sl__json_write_envoy(const struct sl__envoy_answer *a, char *buf, size_t cap, size_t *len);

/*
 * Write the native answer (a simulate output line without t_ms):
 * {"decision", "delay_ms", "statuses": [{"decision", "limit", "quota",
 * "remaining", "reset_ms", "retry_after_ms"}]} and, when denied,
 * "message": "rate limit 'NAME' exceeded: Q per PERIOD; retry in N s".
 * A status with no limit is {"decision": "allow", "limit": null}.
 * SL_OK with *len, or SL_ETOOBIG.
 */
int sl__json_build_check(const struct sl_result *res, char *buf, size_t cap, size_t *len);
/* The same, with "policy": POLICY after the statuses when a failure
 * policy made the answer (`policy` "allow", "deny" or "local"; NULL: none,
 * as sl__json_build_check). */
int sl__json_build_check_by(const struct sl_result *res, const char *policy, char *buf, size_t cap,
                            size_t *len);

/* The human sentence of a denial (the "message" above), NUL-terminated in
 * buf; "" when `res` is not a denial. Truncated to fit. */
void sl__json_deny_message(const struct sl_result *res, char *buf, size_t cap);

/* Write {"error": MESSAGE} (the body of a 400). SL_OK or SL_ETOOBIG. */
int sl__json_build_error(const char *message, char *buf, size_t cap, size_t *len);

#endif /* SL_SERVER_HTTP_JSON_H */
