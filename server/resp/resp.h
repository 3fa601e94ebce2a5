/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp.h - what the RESP protocol files share (internal): the command table
 * and the handlers it lists. Types in resp-t.h.
 */
#ifndef SL_SERVER_RESP_H
#define SL_SERVER_RESP_H

#include <stdbool.h>

#include "resp-t.h"

/* The protocol (resp.c), for the server's registration. */
extern const struct sl__proto sl__proto_resp;

/* The command table, terminated by a NULL name. */
extern const struct sl__resp_command sl__resp_commands[];
size_t sl__resp_ncommands(void);

/* True if arg equals the ASCII word `s` ignoring case. */
bool sl__resp_eq(struct sl_str arg, const char *s);

/* resp_conn.c: what clients send on connect. */
int sl__resp_ping(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);
int sl__resp_echo(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);
int sl__resp_hello(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                   struct sl__buf *);
int sl__resp_auth(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);
int sl__resp_client(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                    struct sl__buf *);
int sl__resp_select(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                    struct sl__buf *);
int sl__resp_command(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                     struct sl__buf *);
int sl__resp_info(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);
int sl__resp_config(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                    struct sl__buf *);
int sl__resp_quit(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);

/* resp_sl.c: decisions. */
int sl__resp_throttle(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                      struct sl__buf *);
int sl__resp_check(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                   struct sl__buf *);
int sl__resp_checkm(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                    struct sl__buf *);
int sl__resp_acquire(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                     struct sl__buf *);
int sl__resp_release(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                     struct sl__buf *);
int sl__resp_peek(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                  struct sl__buf *);
int sl__resp_reset(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                   struct sl__buf *);
/* DEL key: forget a CL.THROTTLE key's states (every parameter set). */
int sl__resp_del(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                 struct sl__buf *);
int sl__resp_debug(struct sl__conn *, struct sl__resp_state *, const struct sl__resp_cmd *,
                   struct sl__buf *);

/* redis-cell's rounding of a duration to whole seconds: truncated, plus one
 * when at least a millisecond is left over. */
int64_t sl__resp_cell_seconds(int64_t ns);

#endif /* SL_SERVER_RESP_H */
