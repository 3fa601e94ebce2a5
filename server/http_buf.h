/*
 * http_buf.h - an append-only text writer into a caller-supplied buffer
 * (internal), used to build HTTP headers and JSON bodies without allocating.
 *
 * It never allocates and never writes past `cap`: once an append does not
 * fit, the writer is marked overflowed, later appends are ignored, and the
 * caller sees SL_ETOOBIG from sl__buf_finish(). It does not grow buffers;
 * a caller that wants that retries with a bigger one.
 *
 * Ownership: the bytes belong to the caller; the writer only borrows them.
 */
#ifndef SL_SERVER_HTTP_BUF_H
#define SL_SERVER_HTTP_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl__buf {
    char *p;       /* caller's storage */
    size_t cap;    /* bytes of storage */
    size_t len;    /* bytes written so far */
    bool overflow; /* an append did not fit */
};

/* Start writing at p[0]; cap may be 0 (every append then overflows). */
void sl__buf_init(struct sl__buf *b, char *p, size_t cap);
/* Append n raw bytes. */
void sl__buf_put(struct sl__buf *b, const char *s, size_t n);
/* Append a NUL-terminated string. */
void sl__buf_puts(struct sl__buf *b, const char *s);
/* Append the decimal form of v (no allocation, no locale). */
void sl__buf_i64(struct sl__buf *b, int64_t v);
void sl__buf_u64(struct sl__buf *b, uint64_t v);
/* Append s[0..n) as a JSON string literal, quotes included; control bytes
 * escaped, other bytes copied as they are (the caller's input is UTF-8 or
 * it is echoed as given). */
void sl__buf_json_str(struct sl__buf *b, const char *s, size_t n);
/* SL_OK with *len the bytes written (and a NUL after them when room is
 * left), or SL_ETOOBIG when anything did not fit. len may be NULL. */
int sl__buf_finish(struct sl__buf *b, size_t *len);

#endif /* SL_SERVER_HTTP_BUF_H */
