/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive_int.h - what the adaptive controllers' files share (internal):
 * adaptive.c (the common calls, AIMD, Vegas, Gradient2) hands the gradient
 * controller's samples and ticks to adaptive_gradient.c. Times given here
 * are already clamped (never earlier than a->last_ns); latencies are >= 1.
 */
#ifndef SL_ADAPTIVE_INT_H
#define SL_ADAPTIVE_INT_H

#include "sluice_adaptive.h"

/* A uniform 64-bit draw from the state's generator (splitmix64). */
uint64_t sl__adaptive_rand(struct sl_adaptive *a);
/* ceil(x) for 0 <= x, exactly (no libm); INT64_MAX from 2^63 up. */
int64_t sl__adaptive_ceil(double x);

/* The gradient controller. */
void sl__adaptive_gradient_init(struct sl_adaptive *a, int64_t now_ns);
void sl__adaptive_gradient_tick(struct sl_adaptive *a, int64_t now_ns);
void sl__adaptive_gradient_sample(struct sl_adaptive *a, int64_t now_ns, int64_t start_ns,
                                  int64_t rtt_ns, uint32_t inflight);

#endif /* SL_ADAPTIVE_INT_H */
