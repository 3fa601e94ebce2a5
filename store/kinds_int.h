/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * kinds_int.h - what the two halves of the store layer's dispatch share
 * (private to store/): the configuration of every kind, read by
 * kinds_config.c (the configuration, linked by `sluice check -c` too) and
 * used by kinds.c (the stores at run time).
 *
 * The struct is owned by whoever called sl__store_config_new() and freed
 * by sl__store_config_free(); its `shared` states are made by kinds.c
 * before the first store and freed through `drop_shared`, so the
 * configuration half names no runtime function.
 */
#ifndef SL_STORE_KINDS_INT_H
#define SL_STORE_KINDS_INT_H

#include "kind.h"

#define SL__STORE_NKINDS 3 /* entries of both tables of kinds */

/* The configuration's table of kinds, in the order of kinds.c's. */
extern const struct sl__store_kind_config *const sl__store_kind_configs[SL__STORE_NKINDS];

struct sl__store_config {
    unsigned type;                  /* index in the tables of kinds */
    void *cfg[SL__STORE_NKINDS];    /* each kind's configuration */
    void *shared[SL__STORE_NKINDS]; /* what each kind's stores share in the process */
    bool shared_made;               /* kinds.c made them (once, before the first store) */
    void (*drop_shared)(struct sl__store_config *c); /* frees them; NULL: none made */
    sl__store_log_fn log;                            /* the server's log, or NULL */
    void *log_arg;
};

#endif /* SL_STORE_KINDS_INT_H */
