/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * envoy.h - what a decision means in Envoy's rate limit API
 * (envoy.service.ratelimit.v3), shared by every protocol that speaks it:
 * HTTP's POST /json (proto3 JSON) and gRPC (protobuf). Internal.
 *
 * It maps a struct sl_result to RateLimitResponse's fields (codes, the
 * current limit as requests per Envoy unit, remaining, the time until
 * reset) and holds Envoy's request-side types (the per-descriptor `limit`
 * override), so that both encodings give the same answer from the same
 * rules. It does not parse or write any wire format.
 *
 * Ownership: everything is borrowed from the result for the call's
 * duration; no allocation, no clock.
 */
#ifndef SL_SERVER_ENVOY_H
#define SL_SERVER_ENVOY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* RateLimitResponse.Code, by enum number. */
enum sl__envoy_code { SL__ENVOY_UNKNOWN = 0, SL__ENVOY_OK = 1, SL__ENVOY_OVER_LIMIT = 2 };

/* RateLimitResponse.RateLimit.Unit, by enum number (MONTH is 30 days and
 * YEAR 365, as envoyproxy/ratelimit counts them). */
struct sl__envoy_unit {
    const char *name; /* as in proto3 JSON: "SECOND" */
    int64_t ns;       /* 0 for UNKNOWN */
};
#define SL__ENVOY_N_UNITS 7
extern const struct sl__envoy_unit sl__envoy_units[SL__ENVOY_N_UNITS];

/* The unit whose name is name[0..len), or -1. */
int sl__envoy_unit_find(const char *name, size_t len);

/*
 * How a limit is reported in Envoy's current_limit: its unit (an index in
 * sl__envoy_units) and requests per unit. A period that is exactly an
 * Envoy unit (1s, 1m, 1h, 1d, 30d month, 365d year) is reported as is.
 * Otherwise the rate is expressed in the longest Envoy unit not longer than
 * the period (SECOND for periods under a second), requests_per_unit =
 * floor(requests * unit / period); if that is 0 the next longer unit is
 * tried, and so on up to YEAR. Saturates at UINT32_MAX. A limit without a
 * period (concurrency) reports UNKNOWN and its requests.
 */
void sl__envoy_unit_of(const struct sl_limit *l, unsigned *unit, uint32_t *per_unit);

/* Envoy's per-descriptor `limit` override (RateLimitDescriptor.RateLimitOverride). */
struct sl__envoy_override {
    bool set;
    uint32_t requests_per_unit;
    int64_t unit_ns; /* SECOND..YEAR as nanoseconds; 0 when UNKNOWN */
};

/*
 * Envoy's request rules that do not depend on the encoding, for every
 * decoder of RateLimitRequest (proto3 JSON, protobuf), so that both refuse
 * and count alike:
 *  - the request's cost: hits_addend 0 or absent means 1
 *    (sl__envoy_request_hits);
 *  - a descriptor's own hits_addend is its cost (0 peeks), absent means
 *    the request's (the decoder sets sl_descriptor.hits to it or -1);
 *  - sl__envoy_request_check(): a non-empty domain, at least one
 *    descriptor, no entry with an empty key (a descriptor with no entries
 *    is fine: it matches no rule and is answered OK). SL_OK,
 *    or SL_EINVAL with "what: why" in err[0..cap) in /json's words.
 * Counts above SL_MAX_DESCRIPTORS / SL_MAX_ENTRIES are the decoder's to
 * refuse (it cannot store them): SL_ETOOBIG with sl__envoy_too_many().
 */
uint64_t sl__envoy_request_hits(uint64_t hits_addend);
int sl__envoy_request_check(const struct sl_request *req, char *err, size_t cap);
/* "descriptors: too many (at most 32)" (descriptor < 0) or
 * "descriptors[I].entries: too many (at most 16)"; returns SL_ETOOBIG. */
int sl__envoy_too_many(long descriptor, char *err, size_t cap);

/* The limit a descriptor's override stands for, as envoyproxy/ratelimit
 * applies it: a fixed window of requests_per_unit per `unit` (an index in
 * sl__envoy_units), aligned to the epoch, finished. SL_EINVAL for a rate
 * of 0 or the UNKNOWN unit (the caller says "needs requests_per_unit >= 1
 * and a unit"). */
int sl__envoy_override_limit(uint64_t requests_per_unit, unsigned unit, struct sl_limit *l);

/* One DescriptorStatus. */
struct sl__envoy_status {
    enum sl__envoy_code code;
    bool has_limit;   /* current_limit present */
    const char *name; /* current_limit.name, "" when the limit has none */
    uint32_t requests_per_unit;
    unsigned unit; /* index in sl__envoy_units */
    uint32_t limit_remaining;
    int64_t reset_s; /* duration_until_reset in whole seconds, rounded up */
};

/* response_headers_to_add: at most three headers, their bytes in buf. */
#define SL__ENVOY_MAX_HEADERS 3
struct sl__envoy_headers {
    size_t n;
    struct {
        struct sl_str key, value;
    } h[SL__ENVOY_MAX_HEADERS];
    char buf[2048];
};

/* A RateLimitResponse. */
struct sl__envoy_answer {
    enum sl__envoy_code overall;
    size_t n;
    struct sl__envoy_status st[SL_MAX_DESCRIPTORS];
    struct sl__envoy_headers headers;
};

struct sl__config;

/*
 * The answer Envoy's API gives for `res`, decided at now_ns, as
 * envoyproxy/ratelimit gives it:
 *  - a delay is OK; a status with no limit is a bare OK; an `unlimited`
 *    rule is OK with limit_remaining 4294967295 and no current_limit;
 *  - current_limit.name is the rule's own `name`, "" when it has none;
 *  - `shadow` (the decision ran under a shadow kill switch or the global
 *    rules.shadow_mode): the request is OK overall, and each descriptor
 *    that would have been denied still says OVER_LIMIT;
 *  - response headers when cfg->envoy_headers: from the descriptor with
 *    the lowest remaining (the first one over its limit, if any), in the
 *    configured style.
 */
void sl__envoy_answer(const struct sl__config *cfg, const struct sl_result *res, bool shadow,
                      int64_t now_ns, struct sl__envoy_answer *out);

#endif /* SL_SERVER_ENVOY_H */
