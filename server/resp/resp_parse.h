/*
 * resp_parse.h - the RESP2 request parser (internal): one command, sent as
 * an array of bulk strings (what every client library sends) or as an
 * inline line (what a human types into telnet).
 *
 * Pure: no allocation, no I/O, no state between calls. The arguments point
 * into the caller's buffer and live as long as it does.
 */
#ifndef SL_SERVER_RESP_PARSE_H
#define SL_SERVER_RESP_PARSE_H

#include <stddef.h>
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

/* The message for the last error, for the `-ERR Protocol error: ...` line
 * sent before closing; a static string. */
const char *sl__resp_parse_error(const char *buf, size_t len, size_t max_bytes);

#endif /* SL_SERVER_RESP_PARSE_H */
