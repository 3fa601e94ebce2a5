/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp-t.h - the types the RESP protocol files share (internal): the
 * per-connection state, an asynchronous operation in flight, and one row of
 * the command table.
 */
#ifndef SL_SERVER_RESP_T_H
#define SL_SERVER_RESP_T_H

#include <stdbool.h>
#include <stdint.h>

#include "conn-t.h"
#include "decide.h"
#include "resp_parse.h"
#include "sluice.h"

struct sl__conn;

enum sl__resp_op_kind {
    SL__RESP_OP_THROTTLE, /* CL.THROTTLE: redis-cell's five integers */
    SL__RESP_OP_DECIDE,   /* SL.CHECK/CHECKM/PEEK/RESET: decision and statuses */
    SL__RESP_OP_ACQUIRE,  /* SL.ACQUIRE: as DECIDE plus the lease */
    SL__RESP_OP_RELEASE,  /* SL.RELEASE: 1 released, 0 nothing held */
    SL__RESP_OP_DEL,      /* DEL of a CL.THROTTLE key: 1 */
};

/* One decision in flight; lives in the connection's op ring at the index
 * of its reply slot (sl__conn_op_reserve), so starting one allocates
 * nothing. */
struct sl__resp_op {
    struct sl__decide_op d; /* the decision path's part */
    struct sl__conn *c;
    int64_t slot;
    enum sl__resp_op_kind kind;
    struct sl_limit limit; /* CL.THROTTLE's ad hoc limit, kept for the store */
};

struct sl__resp_state {
    uint64_t id;               /* CLIENT ID */
    bool admin;                /* AUTH with the admin token succeeded on this connection */
    struct sl__resp_resume rs; /* where a partial command stopped */
    char name[64];             /* CLIENT SETNAME (truncated), "" when unset */
};

/* A command handler: reply into `out` or start an operation that fills a
 * reply slot later. Returns 0, or 1 to close the connection after the reply
 * (QUIT). */
typedef int (*sl__resp_fn)(struct sl__conn *c, struct sl__resp_state *st,
                           const struct sl__resp_cmd *cmd, struct sl__buf *out);

struct sl__resp_command {
    const char *name; /* upper case */
    int arity;        /* argc including the name; -N: at least N */
    sl__resp_fn fn;
    const char *flags; /* for COMMAND: "fast", "write", ... */
    bool privileged;   /* changes state for the operator: needs the admin privilege */
};

#endif /* SL_SERVER_RESP_T_H */
