/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_parse.h - the RESP2 request parser (internal): one command, sent as
 * an array of bulk strings (what every client library sends) or as an
 * inline line (what a human types into telnet).
 *
 * Pure: no I/O. Without a resume state it keeps nothing between calls and
 * re-reads a partial command from its start; with one (a connection's), it
 * goes on where the last call stopped, so no byte is looked at twice
 * however the command is cut into reads (a slow client cannot make the
 * server re-scan a large command). The arguments point into the caller's
 * buffer and live as long as it does.
 */
#ifndef SL_SERVER_RESP_PARSE_H
#define SL_SERVER_RESP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sluice.h"

/* Most arguments in one command (SL.CHECKM with SL_MAX_DESCRIPTORS x
 * SL_MAX_ENTRIES pairs fits). More is a protocol error. */
#define SL__RESP_MAX_ARGS 1200
/* Longest inline command line. */
#define SL__RESP_MAX_INLINE (64 * 1024)

struct sl__resp_cmd {
    size_t argc; /* 0 for an empty inline line: nothing to run */
    struct sl_str argv[SL__RESP_MAX_ARGS];
};

/*
 * Parse one command from buf[0..len). Returns the bytes it takes (> 0) with
 * `cmd` filled, -2 when the command is not complete yet, -1 for a protocol
 * error (malformed, more than SL__RESP_MAX_ARGS arguments, an argument or
 * the whole command above `max_bytes`). The caps are checked on the
 * declared lengths, before any byte of the payload has to be buffered.
 */
ssize_t sl__resp_parse(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd);

/* Where a partial command stopped: zeroed means "at its start". The
 * arguments parsed so far are kept as offsets from the command's start
 * (`args`, malloc'd on first need, freed by sl__resp_resume_free). */
struct sl__resp_resume {
    size_t pos;          /* bytes of the command parsed so far */
    size_t argc;         /* arguments complete so far */
    long long n;         /* arguments the command announced (multibulk) */
    uint32_t (*args)[2]; /* [i] = {offset, length} of argument i */
    size_t scanned;      /* bytes looked at by the calls (for the metrics) */
};

/* sl__resp_parse() going on from `rs` for the command at buf[0..len),
 * which must be the same command, with more bytes behind, as last time.
 * rs is reset when a command is complete or refused. */
ssize_t sl__resp_parse_resume(const char *buf, size_t len, size_t max_bytes,
                              struct sl__resp_cmd *cmd, struct sl__resp_resume *rs);
void sl__resp_resume_free(struct sl__resp_resume *rs);

/* The message for the last error, for the `-ERR Protocol error: ...` line
 * sent before closing; a static string. */
const char *sl__resp_parse_error(const char *buf, size_t len, size_t max_bytes);

#endif /* SL_SERVER_RESP_PARSE_H */
