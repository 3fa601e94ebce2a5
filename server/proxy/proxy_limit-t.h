/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_limit-t.h - the types of a route's limits (internal): the
 * descriptors built from each request (Envoy's rate limit actions), the
 * domain they are decided in, and how a denial and a delay are answered.
 *
 * Ownership: part of the server's configuration (strings owned, freed by
 * proxy_limit_config.c); read-only once workers run.
 */
#ifndef SL_PROXY_LIMIT_T_H
#define SL_PROXY_LIMIT_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy_addr.h"

/* One action: one entry of a descriptor, from the request. */
enum sl__proxy_action_kind {
    SL__PA_REMOTE_ADDRESS,     /* ("remote_address", the client's address) */
    SL__PA_MASKED_REMOTE,      /* ("masked_remote_address", "192.0.2.0/24") */
    SL__PA_REQUEST_HEADERS,    /* (descriptor_key, a header's value) */
    SL__PA_GENERIC_KEY,        /* (descriptor_key, descriptor_value) */
    SL__PA_HEADER_VALUE_MATCH, /* (descriptor_key, descriptor_value) if headers match */
    SL__PA_PATH,               /* ("path", the target without its query) */
    SL__PA_METHOD,             /* ("method", the method) */
};

/* How a header_value_match matcher compares (Envoy's HeaderMatcher). */
enum sl__proxy_match_kind {
    SL__PM_EXACT,
    SL__PM_PREFIX,
    SL__PM_SUFFIX,
    SL__PM_CONTAINS,
    SL__PM_PRESENT,
};

struct sl__proxy_hmatch {
    char *name; /* lower-case; ":method", ":path", ":authority" are the request's */
    enum sl__proxy_match_kind kind;
    char *value;      /* not with PRESENT */
    bool present;     /* PRESENT: match when present (true) or absent (false) */
    bool ignore_case; /* string_match's ignore_case */
    bool invert;      /* invert_match */
};

struct sl__proxy_action {
    enum sl__proxy_action_kind kind;
    char *key;           /* descriptor_key (a default per kind) */
    char *value;         /* descriptor_value: GENERIC_KEY, HEADER_VALUE_MATCH */
    char *header;        /* REQUEST_HEADERS: header_name, lower-case */
    bool skip_if_absent; /* REQUEST_HEADERS: a missing header drops only this entry */
    bool expect_match;   /* HEADER_VALUE_MATCH: the entry when the headers (do not) match */
    uint8_t v4_bits;     /* MASKED_REMOTE: prefix lengths kept */
    uint8_t v6_bits;     /* ... */
    struct sl__proxy_hmatch *matchers;
    size_t n_matchers;
};

/* One rate_limits item: its actions make one descriptor. */
struct sl__proxy_rate_limit {
    struct sl__proxy_action *actions;
    size_t n_actions; /* 1..SL_MAX_ENTRIES */
};

/* The body of a denial. */
enum sl__proxy_deny_body {
    SL__PD_PROBLEM = 0,  /* application/problem+json (RFC 9457) */
    SL__PD_ENVELOPE = 1, /* {"error": {"code", "message", "context": {"renewal"}}} */
    SL__PD_TEXT = 2,     /* deny_text as text/plain */
};

#define SL__PROXY_UNSET_STATUS 0

/* A route's limits; n_rls 0: nothing is limited. */
struct sl__proxy_limits {
    char *domain; /* the rules' domain the descriptors are decided in */
    struct sl__proxy_rate_limit *rls;
    size_t n_rls;         /* 0..SL_MAX_DESCRIPTORS */
    bool uses_address;    /* an action reads the client's address */
    int64_t max_delay_ms; /* a longer delay is a denial */
    uint32_t max_queue;   /* requests held for their delay per worker; more are denied */
    int deny_status;      /* 429 unless configured */
    unsigned deny_body;   /* enum sl__proxy_deny_body */
    char *deny_text;      /* with SL__PD_TEXT */
    unsigned headers;     /* enum sl__hdr_family set; see headers_set */
    bool headers_set;     /* `headers` given for the route (else http.headers) */
};

#endif /* SL_PROXY_LIMIT_T_H */
