/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_chunk.h - an incremental, strict decoder of the chunked transfer
 * coding (internal), fed the bytes of a body as they arrive, in pieces of
 * any size, keeping its place between calls in a few bytes of state.
 *
 * Strict: a chunk size is 1 to 15 hex digits directly followed by CRLF or
 * by extensions (ignored) and CRLF; lines end in CRLF (a bare LF is an
 * error); data is followed by CRLF; trailer lines are read, checked and
 * dropped. Lines are bounded (SL__PROXY_CHUNK_MAX_LINE), so a peer cannot
 * make the decoder scan forever.
 *
 * Pure: no allocation, no I/O. It does not re-encode (the proxy writes its
 * own chunk lines) and keeps no data: the caller forwards each data piece
 * from its own buffer.
 */
#ifndef SL_PROXY_CHUNK_H
#define SL_PROXY_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest chunk-size line (with extensions) or trailer line, bytes. */
#define SL__PROXY_CHUNK_MAX_LINE 4096

struct sl__proxy_chunk {
    uint64_t left;  /* data bytes left in the current chunk */
    uint32_t line;  /* bytes of the current framing line so far */
    uint8_t state;  /* where in the coding (proxy_chunk.c) */
    uint8_t digits; /* hex digits of the size so far */
};

/* Start decoding a body. */
void sl__proxy_chunk_init(struct sl__proxy_chunk *st);

/*
 * Decode from p[0..n): returns the bytes it took (0..n), or -1 when the
 * coding is broken. When it stops at data, *data and *data_len (possibly
 * 0) give the one piece of body data among the bytes taken: the caller
 * forwards it, then calls again with the rest. The body is complete when
 * sl__proxy_chunk_done() says so (the bytes after it are not taken).
 */
ssize_t sl__proxy_chunk_step(struct sl__proxy_chunk *st, const char *p, size_t n, const char **data,
                             size_t *data_len);

/* The last chunk and the trailers have been read. */
bool sl__proxy_chunk_done(const struct sl__proxy_chunk *st);

#endif /* SL_PROXY_CHUNK_H */
