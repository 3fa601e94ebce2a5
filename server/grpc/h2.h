/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2.h - gRPC over HTTP/2 (cleartext, prior knowledge) as a pure
 * byte-in, byte-out session (internal): it frames and unframes gRPC calls
 * and enforces the protocol's limits; it knows nothing of sockets, event
 * loops, rate limiting or protobuf. HTTP/2 is framed by hand (h2.c,
 * h2_stream.c); header blocks are decoded by nghttp2's HPACK inflater.
 * Types in h2-t.h.
 *
 * What a session does by itself:
 *  - SETTINGS: MAX_CONCURRENT_STREAMS and MAX_HEADER_LIST_SIZE from its
 *    limits, ENABLE_PUSH 0, NO_RFC7540_PRIORITIES; the peer's
 *    INITIAL_WINDOW_SIZE (applied to open streams), MAX_FRAME_SIZE and
 *    HEADER_TABLE_SIZE honoured; PING answered; flow control both ways
 *    (WINDOW_UPDATE for what it consumes, replies within the peer's
 *    windows);
 *  - a request that is not a gRPC call (method not POST: HTTP 405;
 *    content-type not application/grpc: HTTP 415), a message above the limit
 *    (RESOURCE_EXHAUSTED, the rest of the stream reset with NO_ERROR), a
 *    compressed message (UNIMPLEMENTED), a second message or none
 *    (INTERNAL) are answered without the owner;
 *  - protocol errors end the connection with GOAWAY carrying the last
 *    stream id and RFC 9113's error (PROTOCOL_ERROR, FRAME_SIZE_ERROR,
 *    FLOW_CONTROL_ERROR, STREAM_CLOSED, COMPRESSION_ERROR); errors of one
 *    stream (a malformed request as RFC 9113 8.2 and 8.3 define it, DATA
 *    on a half-closed stream, its window overflowing) reset it; floods of
 *    frames that cost the server without a call (SETTINGS, PING,
 *    RST_STREAM, PRIORITY, empty DATA, empty CONTINUATION, unknown types,
 *    refused frames) beyond a budget of 1000 at once and 1000 a second
 *    end it with GOAWAY ENHANCE_YOUR_CALM; streams above the limit are
 *    refused (REFUSED_STREAM);
 *  - a header list above the limit, more decoded header bytes than the
 *    limits' budget a second, or a header block too long (h2.c), stop the
 *    decoding at once: the calls already taken are answered, the other
 *    streams refused, and the session ends with GOAWAY ENHANCE_YOUR_CALM.
 *
 * Ownership: the session owns its streams; a stream handed to ops->call()
 * stays valid until the owner gives it back. A stream the owner answers
 * is closed at the next flush, so ops->gone never runs inside the owner's
 * own sl__h2_reply/sl__h2_fail/sl__h2_send. Memory: the HPACK inflater
 * allocates from the session's own pool (h2_mem.h), streams are recycled
 * and the output buffer kept, so a warm session's calls allocate nothing
 * from the general heap. Threads: one session belongs to one thread.
 */
#ifndef SL_SERVER_H2_H
#define SL_SERVER_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "h2-t.h"

/* A session that has received nothing yet; NULL when out of memory. */
struct sl__h2 *sl__h2_new(const struct sl__h2_limits *lim, const struct sl__h2_ops *ops,
                          void *owner);
/* Free the session. No unary call may be waiting for its owner's answer;
 * streams still the owner's are freed with it (ops->gone is not called). */
void sl__h2_free(struct sl__h2 *h);

/*
 * Take the bytes the peer sent, buf[0..len), starting with the 24-byte
 * client preface: returns how many were consumed (whole frames only; the
 * rest is offered again with more bytes behind it). A frame whose header
 * says it is larger than allowed is consumed at once (and refused). Calls
 * ops->call() for every call completed. Output waits for sl__h2_flush().
 */
size_t sl__h2_feed(struct sl__h2 *h, const uint8_t *buf, size_t len);

/* The time (CLOCK_MONOTONIC, ms: an event loop's cached time, say) the
 * session's flood and HPACK budgets go by from now on, until the next
 * call: a feed then reads no clock of its own. Without it the session
 * reads CLOCK_MONOTONIC_COARSE. */
void sl__h2_clock(struct sl__h2 *h, int64_t now_ms);

/* Hand everything the session has to say to ops->send(), in one call. */
void sl__h2_flush(struct sl__h2 *h);

/* The session is over (GOAWAY sent and no stream left, or a fatal error):
 * once flushed, close the connection. */
bool sl__h2_done(const struct sl__h2 *h);

/* A stream holds part of a request (headers without the end of the
 * message): the connection's read timeout should run. */
bool sl__h2_partial(const struct sl__h2 *h);

/* Replies wait for the peer's flow-control window (after a flush: the
 * peer grants none). */
bool sl__h2_waiting(const struct sl__h2 *h);

/*
 * Look at the replies waiting for the peer's window at `now_ms` (the
 * owner's clock): a reply is stamped when first looked at and whenever
 * some of it has left since the last look. Returns when the oldest stamp
 * will be `timeout_ms` old (call again then, and after flushes), or -1
 * when no reply waits. When that time has come (result <= now_ms) the
 * session is ended with GOAWAY ENHANCE_YOUR_CALM: a peer that grants no
 * window holds its streams and their replies for as long as it likes
 * otherwise, with nothing queued on the socket for the connection's own
 * write timeout to see.
 */
int64_t sl__h2_stalled_until(struct sl__h2 *h, int64_t now_ms, int64_t timeout_ms);

/* Graceful end: GOAWAY NO_ERROR with the last stream id received; streams
 * up to it are still served. Idempotent. */
void sl__h2_goaway(struct sl__h2 *h);

/* Answer the call on `s` with a serialized message (copied) and grpc-status
 * 0; or with a gRPC error and a message (Trailers-Only, or trailers after
 * the messages a stream sent). Nothing is sent if the peer has reset the
 * stream or it was answered already. */
void sl__h2_reply(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len);
void sl__h2_fail(struct sl__h2 *h, struct sl__h2_stream *s, enum sl__grpc_status code,
                 const char *message);
/*
 * Streams: send one message on `s` (copied; the response headers go first),
 * to follow as the peer's flow-control window allows. The stream's queued
 * bytes draw on the owner's budget (ops->budget): false when it refuses,
 * out of memory, or the call is over - the owner then ends it or forgets
 * it. sl__h2_fail() ends a stream with any status, OK included, after the
 * messages queued; sl__h2_reply() is for unary calls.
 */
bool sl__h2_send(struct sl__h2 *h, struct sl__h2_stream *s, const uint8_t *msg, size_t len);

/* The owner is done with `s` (its owner area is no longer used): the
 * stream is the session's again. Every call handed over ends with this. */
void sl__h2_release(struct sl__h2 *h, struct sl__h2_stream *s);

/* The owner's per-call bytes in `s` (SL__H2_OWNER_BYTES, 16-byte aligned). */
void *sl__h2_owner_area(struct sl__h2_stream *s);

/* Blocks the session's pool took from the heap since it was made (tests). */
uint64_t sl__h2_heap_allocs(const struct sl__h2 *h);

#endif /* SL_SERVER_H2_H */
