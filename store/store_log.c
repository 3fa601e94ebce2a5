/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_log.c - the sink of the stores' lines (store_log.h, store.h).
 *
 * One process-wide pointer, set once at start before any store or thread
 * exists, because the stores' lines come from places that hold no server
 * object (a worker's connection callback, the rules subscriber's work
 * queue) and the layers keep store/ from calling the daemon's log itself.
 * Without a sink (tests of the store alone) a line goes to stderr.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "store_log.h"

static _Atomic(sl__store_log_fn) sink;

void sl__store_set_log(sl__store_log_fn fn)
{
    atomic_store(&sink, fn);
}

void sl__store_log_line(enum sl__store_log_level lvl, const char *event, const char *fmt, ...)
{
    sl__store_log_fn fn = atomic_load(&sink);
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap); /* a longer message is cut */
    va_end(ap);
    if (fn != NULL)
        fn(lvl, event, msg);
    else
        fprintf(stderr, "sluiced: %s %s\n", event, msg);
}
