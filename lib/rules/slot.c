/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * slot.c - publish rules snapshots to many reader threads: one writer swaps
 * the snapshot under a mutex and bumps a generation counter; a reader
 * compares the generation with one atomic load and takes the mutex only
 * when it changed, to take a reference on the new snapshot. A reader keeps
 * its old snapshot alive until it notices the change, so a check in progress
 * never sees its rules freed.
 *
 * It does not build or validate snapshots (builder.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "rules/rules_int.h"

struct sl_rules_slot {
    pthread_mutex_t mu;
    sl_rules *cur;            /* one reference, guarded by mu */
    atomic_uint_fast64_t gen; /* bumped on every publish */
};

struct sl_rules_reader {
    sl_rules_slot *slot;
    sl_rules *held; /* one reference */
    uint_fast64_t gen;
};

sl_rules_slot *sl_rules_slot_new(sl_rules *initial)
{
    sl_rules_slot *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        sl_rules_unref(initial);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->cur = initial;
    atomic_init(&s->gen, 1);
    return s;
}

/* All readers must be freed first. */
void sl_rules_slot_free(sl_rules_slot *s)
{
    if (s == NULL)
        return;
    sl_rules_unref(s->cur);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void sl_rules_slot_publish(sl_rules_slot *s, sl_rules *r)
{
    sl_rules *old;

    pthread_mutex_lock(&s->mu);
    old = s->cur;
    s->cur = r;
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
    pthread_mutex_unlock(&s->mu);
    sl_rules_unref(old);
}

sl_rules_reader *sl_rules_reader_new(sl_rules_slot *s)
{
    sl_rules_reader *rd = calloc(1, sizeof(*rd));

    if (rd != NULL)
        rd->slot = s;
    return rd; /* gen 0 never matches: the first get takes the snapshot */
}

void sl_rules_reader_free(sl_rules_reader *rd)
{
    if (rd == NULL)
        return;
    sl_rules_unref(rd->held);
    free(rd);
}

const sl_rules *sl_rules_reader_get(sl_rules_reader *rd)
{
    sl_rules_slot *s = rd->slot;
    uint_fast64_t g = atomic_load_explicit(&s->gen, memory_order_acquire);
    sl_rules *old;

    if (g == rd->gen)
        return rd->held;
    pthread_mutex_lock(&s->mu);
    old = rd->held;
    rd->held = sl_rules_ref(s->cur);
    rd->gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    sl_rules_unref(old);
    return rd->held;
}
