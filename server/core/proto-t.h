/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto-t.h - the types of the per-protocol interface of sluiced (internal).
 *
 * How a protocol plugs into the connection core, in one page:
 *
 *  - A protocol is one `const struct sl__proto` in its own room
 *    (server/<room>/), listed in the registration table sl__protos
 *    (server/protocols.c). When a connection's first bytes arrive, the core
 *    asks every protocol enabled on that listener, in table order, whether
 *    the bytes are its own (sniff). The first to say 1 owns the connection for
 *    the rest of its life; -2 from any of them waits for more bytes.
 *  - The core reads into a per-connection buffer (reused, never freed while
 *    the connection lives) and calls on_read() with every byte not yet
 *    consumed. on_read() returns how many bytes it consumed (whole frames
 *    only; the rest is kept and offered again with more bytes behind it), or
 *    -1 to close the connection (a malformed or oversized frame). A protocol
 *    must consume or refuse: if the unconsumed bytes reach the listener's
 *    max frame size the core closes the connection.
 *  - Replies go out with sl__conn_write() (bytes copied into the
 *    connection's output buffer, flushed when on_read() returns).
 *  - Decisions go through the one decision path (decide.h): the protocol
 *    hands over its parsed request and formats the result it gets back.
 *  - Asynchronous answers (a decision, an admin write) keep pipelined
 *    replies in order with a reply slot: sl__conn_op_reserve() (or
 *    sl__conn_slot_reserve()) takes the next place in the output stream,
 *    the callback later calls sl__conn_slot_fill() with the reply bytes. Bytes written after a
 * reserved slot wait behind it. A connection is never freed while a slot is reserved, so a callback
 *    may always fill its slot (the bytes are dropped if the peer has gone).
 *  - A multiplexing protocol (HTTP/2) whose answers have no fixed place in
 *    the byte stream pins the connection instead (sl__conn_pin) while an
 *    answer is owed: it is neither closed nor freed until unpinned. Bytes it
 *    consumed into its own state as part of an unfinished request are
 *    declared with sl__conn_partial(), so the read timeout applies to them.
 *  - When the core wants a connection to end (the server stops, the
 *    connection is idle) it calls on_drain() if the protocol has one: the
 *    protocol says goodbye in its own terms (HTTP/2's GOAWAY), finishes what
 *    is in flight and then calls sl__conn_close(). Without on_drain() the
 *    core closes the connection once its replies are flushed.
 *  - on_close() is called once, before the connection's memory is released;
 *    it frees the protocol's per-connection state (c->proto_state).
 *  - A protocol that streams (the proxy: bodies forwarded as they arrive)
 *    may consume part of a frame, stop and resume reading
 *    (sl__conn_hold/unhold), mark a request in flight (sl__conn_set_busy:
 *    the protocol then runs the timeouts) and ask to be told when its
 *    output has been written (sl__conn_want_sent, then on_sent()); see
 *    conn.h. A room with state per worker (pools of its own connections)
 *    closes it in worker_stop().
 *  - A room whose state operators should see (the proxy's adaptive
 *    limits) adds its lines to /metrics and its members to /v1/stats
 *    (render_metrics, render_stats; sl__protos_render_*() in proto.h).
 *
 * Ownership: the core owns connections and their buffers; a protocol owns
 * only what it hangs on c->proto_state. Threads: every call for one
 * connection happens on its worker's loop thread; nothing here is shared.
 */
#ifndef SL_SERVER_PROTO_T_H
#define SL_SERVER_PROTO_T_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sl__buf;
struct sl__conn;
struct sl__server;
struct sl__worker;

struct sl__proto {
    const char *name; /* as in the configuration's `protocols:` list: "resp", "http1" */
    /* Its ALPN id on a TLS listener ("h2", "http/1.1"), NULL: none. */
    const char *alpn;
    /* Served only by listeners that list it, never by a listener without a
     * `protocols:` list (a reverse proxy is not something to get by
     * default, and it claims the same bytes as http1). */
    bool opt_in;
    /* Is this connection mine, judging by its first `len` bytes (len >= 1)?
     * 1 yes, 0 no, -2 cannot tell yet. Pure. */
    int (*sniff)(const char *buf, size_t len);
    /* Called once when the connection is handed to the protocol, before the
     * first on_read(); may set c->proto_state. 0, or -1 to close. May be
     * NULL. */
    int (*on_open)(struct sl__conn *c);
    /* Consume whole frames from buf; bytes consumed (0..len) or -1 to close
     * the connection now (after what was already written is flushed). */
    ssize_t (*on_read)(struct sl__conn *c, const char *buf, size_t len);
    /* End gracefully (see above); may be called again while draining. May
     * be NULL. */
    void (*on_drain)(struct sl__conn *c);
    /* The connection is going away: free c->proto_state. May be NULL. */
    void (*on_close)(struct sl__conn *c);
    /* Everything queued for the peer has been handed to the kernel, after
     * sl__conn_want_sent(): the protocol may write more. May be NULL for
     * protocols that never ask. */
    void (*on_sent)(struct sl__conn *c);
    /* The worker `w` starts stopping (its listeners are closed and its
     * connections asked to close): close what the room keeps on that
     * worker's loop beyond connections (idle pooled connections, timers) so
     * the loop can end. On w's loop thread; may be NULL. */
    void (*worker_stop)(struct sl__worker *w);
    /* The worker's thread is about to end (its loop has stopped): free the
     * protocol's per-thread scratch. May be NULL. */
    void (*thread_exit)(void);
    /* A room's own state for operators, appended to `out` (grown): its
     * lines of /metrics in the Prometheus text format (HELP and TYPE
     * included), and its members of GET /v1/stats' JSON object
     * ("name":value, comma-separated, no braces). Read from what the
     * workers publish for other threads; any thread, any time (a scrape
     * may allocate). May be NULL. */
    void (*render_metrics)(const struct sl__server *srv, struct sl__buf *out);
    void (*render_stats)(const struct sl__server *srv, struct sl__buf *out);
    /* What the room runs on the main thread's loop (the xDS client):
     * started once the first rules serve (0, or -1: the server does not
     * start), stopped when the server starts stopping (close its handles
     * so the loop can end). On the main loop; may be NULL. */
    int (*main_start)(struct sl__server *srv);
    void (*main_stop)(struct sl__server *srv);
};

#endif /* SL_SERVER_PROTO_T_H */
