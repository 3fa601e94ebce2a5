/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy.h - the proxy room as the server registers it (internal): the
 * protocol `proxy` (a reverse proxy for HTTP/1.1 in front of API servers)
 * and its configuration section `proxy:`. How it works is in
 * docs/proxy.md and the headers of its files:
 *
 *   proxy_parse.c   strict HTTP/1.1 heads (requests and responses)
 *   proxy_chunk.c   the chunked coding, decoded incrementally
 *   proxy_head.c    the heads rewritten for the other side
 *   proxy_route.c   which route a request takes
 *   proxy_pool.c    per worker: servers' health, keep-alive pools, the tick
 *   proxy_up.c      one upstream connection's I/O
 *   proxy.c         the protocol: a client connection's requests, each one
 *                   exchange, whose state machine it is (the other files
 *                   report to it and never call it: docs/architecture.md
 *                   §The proxy's exchange)
 *   proxy_resp.c    a response (or a tunnel) back to the client
 *   proxy_gate.c    limiting in the traffic path (proxy_gate.h): decisions,
 *                   shaping queues, concurrency leases
 *   proxy_adaptive.c  adaptive concurrency limits per route and worker
 *                   (proxy_adaptive.h), behind the gate
 *   proxy_addr.c    client addresses: trusted proxies, forwarding headers
 *   proxy_descr.c   a request's descriptors from its route's actions
 *   proxy_deny.c    the answer to a denied request
 *   proxy_log.c     the access log
 *   proxy_config.c  the `proxy:` section
 *   proxy_limit_config.c  its limiting keys (routes' rate_limits, ...)
 *   proxy_adaptive_config.c  a route's adaptive_concurrency
 */
#ifndef SL_PROXY_H
#define SL_PROXY_H

struct sl__proto;
struct sl__config_section;

extern const struct sl__proto sl__proto_proxy;
extern const struct sl__config_section sl__proxy_config_section;

#endif /* SL_PROXY_H */
