/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * stats-t.h - the types of the operator's statistics (internal): the
 * `stats:` configuration section and what one decision in flight keeps for
 * them. The registry itself is opaque (stats.h); its layout is
 * stats_int.h's.
 */
#ifndef SL_SERVER_STATS_T_H
#define SL_SERVER_STATS_T_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

#define SL__STATS_SECONDS 900   /* the series' length: 15 minutes, one slot a second */
#define SL__STATS_KEY_MAX 96    /* bytes of a key's text kept (longer: marked partial) */
#define SL__STATS_RING    65536 /* bytes of key text kept for answers to come, per worker */

/* The separators of a key's text: KEY US VALUE RS KEY US VALUE. */
#define SL__STATS_US '\x1f'
#define SL__STATS_RS '\x1e'

/* How a key is kept and shown (stats.keys). */
enum sl__stats_keys {
    SL__STATS_KEYS_VALUES = 0, /* the descriptor's entries as sent */
    SL__STATS_KEYS_HASH,       /* a keyed hash of them: never the values */
    SL__STATS_KEYS_TRUNCATE,   /* each value cut to stats.key_bytes bytes */
};

/* The `stats:` section (stats_config.c). */
struct sl__stats_config {
    bool enabled;
    unsigned max_series;   /* (domain, limit) pairs per worker */
    unsigned top_keys;     /* Space-Saving counters per pair, per worker, per window */
    int64_t top_window_ms; /* one window of the top keys; two are kept */
    unsigned keys;         /* enum sl__stats_keys */
    unsigned key_bytes;    /* stats.keys truncate: bytes of each value kept */
};

/*
 * What the decision path keeps for the statistics while a decision is in
 * flight (inside struct sl__decide_op, which must stay small). While the
 * store's start call runs, `req` is the request; a store that answers
 * later finds the descriptors' key texts copied into its worker's key ring
 * at `ring_pos` instead (the request is gone by then). A ring that wrapped
 * past them before the answer came loses them: that decision's keys are
 * then not counted in the top keys (its outcomes still are).
 */
struct sl__stats_op {
    const struct sl_request *req; /* NULL once the start call returned */
    const sl_rules *rules;        /* the snapshot decided with (compared, never read) */
    int64_t store_ns;             /* CLOCK_MONOTONIC at the store call; 0: no store call */
    uint64_t ring_pos;            /* where the key texts start in the worker's ring */
    uint32_t ring_len;            /* their bytes; 0: none kept */
};

/* One answered decision, as sl__stats_decision() counts it. Borrowed for
 * the call. */
struct sl__stats_answer {
    unsigned worker;    /* the worker that decided */
    const char *domain; /* domain[0..domain_len), not NUL-terminated */
    size_t domain_len;
    const struct sl__stats_op *op; /* the operation's statistics state */
    int err;                       /* SL_OK, or why it failed */
    const struct sl_result *res;   /* the result when err is SL_OK */
    int64_t now_ns;                /* when it was answered, the server's clock */
    int64_t mono_ns;               /* the same, CLOCK_MONOTONIC */
};

#endif /* SL_SERVER_STATS_T_H */
