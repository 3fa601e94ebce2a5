/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * protocols.c - the server's registration: which protocols sluiced speaks
 * (in sniffing order) and which route tables its HTTP router serves. The
 * one file that names every room; the core and the rooms name none above
 * them.
 *
 * Adding a protocol: its room defines one `const struct sl__proto`; list
 * it in sl__protos below (more specific sniffers first: a fixed preface or
 * HTTP's methods before RESP, whose inline commands are any word). gRPC
 * comes first: its HTTP/2 preface "PRI * HTTP/2.0" starts with a capital
 * word, which RESP would take for an inline command (HTTP/1's sniffer
 * knows no PRI method and says no). Its name goes, in the same place, in
 * sl__proto_names_reg (config_sections.c, what the configuration reads;
 * the daemon refuses to start when the two disagree).
 */
#include <stddef.h>

#include "admin.h"
#include "grpc.h"
#include "http1.h"
#include "http_route.h"
#include "proto.h"
#include "proxy.h"
#include "resp.h"

const struct sl__proto *const sl__protos[] = {
    &sl__proto_grpc, &sl__proto_http1, &sl__proto_proxy, &sl__proto_resp, NULL,
};

const struct sl__http_route *const sl__http_route_tables[] = {
    sl__http_api_routes,
    sl__admin_routes,
    NULL,
};
