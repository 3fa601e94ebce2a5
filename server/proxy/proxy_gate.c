/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_gate.c - the gate of the proxy's traffic path (proxy_gate.h):
 * today every request is forwarded and nothing is kept per request. This
 * is where a request will be checked against its route's limits.
 */
#include "proxy_gate.h"

enum sl__proxy_verdict sl__proxy_gate(struct sl__proxy_x *x)
{
    (void)x;
    return SL__PROXY_FORWARD;
}

void sl__proxy_gate_done(struct sl__proxy_x *x)
{
    (void)x;
}
