/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_log.c - the sink of store_log.h's lines.
 *
 * One process-wide copy of the sink the daemon gave the store
 * configuration, set once at start before any store or thread exists,
 * because the rules subscriber's pull runs where no store is at hand.
 * Without a sink (tests of the store alone) a line goes to stderr.
 */
#include <stdarg.h>
#include <stdio.h>

#include "store_log.h"

static sl__store_log_fn sink;
static void *sink_arg;

void sl__store_log_sink(sl__store_log_fn fn, void *arg)
{
    sink = fn;
    sink_arg = arg;
}

void sl__store_log_line(enum sl__store_level lvl, const char *event, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap); /* a longer message is cut */
    va_end(ap);
    if (sink != NULL)
        sink(sink_arg, lvl, event, msg);
    else
        fprintf(stderr, "sluiced: %s %s\n", event, msg);
}
