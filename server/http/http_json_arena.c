/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_json_arena.c - lets cJSON allocate from a caller's arena.
 *
 * cJSON only offers process-wide allocation hooks, so the hooks installed
 * here (at start-up) serve every cJSON user in the process: while a thread has an arena
 * set (only inside sl__json_* calls) its allocations come from that arena,
 * otherwise from malloc as before. Frees of arena memory are no-ops; the
 * arena is emptied as a whole by sl__json_req_release(). It does not make
 * cJSON thread-safe beyond what cJSON already is (documents are per thread).
 */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "http_json_int.h"

static _Thread_local struct sl__json_arena *current;

static bool in_arena(const struct sl__json_arena *a, const void *p)
{
    const char *c = p;
    return a != NULL && c >= a->base && c < a->base + a->cap;
}

static void *arena_malloc(size_t n)
{
    struct sl__json_arena *a = current;

    if (a != NULL) {
        size_t need = (n + 15) & ~(size_t)15;
        if (need >= n && need <= a->cap - a->used) {
            void *p = a->base + a->used;
            a->used += need;
            return p;
        }
        a->spill++;
    }
    return malloc(n);
}

static void arena_free(void *p)
{
    if (!in_arena(current, p))
        free(p);
}

/* Installed before main() runs, while the process has one thread: cJSON's
 * hooks are plain globals that its allocations read without a lock. */
__attribute__((constructor)) static void install_hooks(void)
{
    cJSON_Hooks h = {.malloc_fn = arena_malloc, .free_fn = arena_free};
    cJSON_InitHooks(&h);
}

void sl__json_arena_init(struct sl__json_arena *a, void *base, size_t cap)
{
    a->base = base;
    a->cap = cap;
    a->used = 0;
    a->spill = 0;
}

struct cJSON *sl__json_parse_in(struct sl__json_arena *a, const char *body, size_t len,
                                const char **why)
{
    struct cJSON *root;

    current = a;
    root = sl__json_parse_strict(body, len, why);
    current = NULL;
    return root;
}

void sl__json_delete_in(struct sl__json_arena *a, struct cJSON *root)
{
    /* Everything in the arena and nothing spilled: dropping the arena frees
     * it all. Otherwise let cJSON walk the tree; the hook frees only what
     * came from malloc. */
    if (root != NULL && (a == NULL || a->spill > 0 || a->used == 0)) {
        current = a;
        cJSON_Delete(root);
        current = NULL;
    }
    if (a != NULL) {
        a->used = 0;
        a->spill = 0;
    }
}
