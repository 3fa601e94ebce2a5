/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * common.c - small helpers the rules files share: diagnostics collection,
 * string copies, arrays that grow by doubling, the order of descriptor
 * identities, and the '*' pattern match used for wildcard values.
 *
 * It knows nothing about the rules format itself.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_int.h"

char *sl__strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p == NULL)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *sl__strdup(const char *s)
{
    return sl__strndup(s, strlen(s));
}

#ifdef SL_RULES_COUNT_OPS
unsigned long long sl__rules_ops;
#endif

int sl__grow(void **v, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 4;
    void *p;

    if (need <= *cap)
        return SL_OK;
    while (n < need)
        n *= 2;
    p = realloc(*v, n * size);
    if (p == NULL)
        return SL_ENOMEM;
    SL__RULES_OPS(*cap); /* what realloc may have copied */
    *v = p;
    *cap = n;
    return SL_OK;
}

int sl__rnode_cmp_identity(const struct sl__rnode *a, const struct sl__rnode *b)
{
    int c;

    SL__RULES_OPS(1);
    c = strcmp(a->key, b->key);
    if (c != 0)
        return c;
    if (a->value == NULL || b->value == NULL)
        return (a->value != NULL) - (b->value != NULL);
    return strcmp(a->value, b->value);
}

int sl__rnode_add_kid(struct sl__rnode *parent, struct sl__rnode *kid)
{
    void *v = parent->kids;

    if (sl__grow(&v, &parent->cap_kids, parent->n_kids + 1, sizeof(*parent->kids)) != SL_OK)
        return SL_ENOMEM;
    parent->kids = v;
    parent->kids[parent->n_kids++] = kid;
    return SL_OK;
}

/* Records "origin:line:col: message". Out of memory is remembered (oom) so
 * that a failed diagnostic still fails the build. */
void sl__diag(struct sl__diags *d, const char *origin, int line, int col, const char *fmt, ...)
{
    char msg[512];
    char *full;
    size_t need;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    need = strlen(origin) + strlen(msg) + 32;
    full = malloc(need);
    if (full == NULL) {
        d->oom = true;
        return;
    }
    snprintf(full, need, "%s:%d:%d: %s", origin, line, col, msg);
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        char **v = realloc(d->v, cap * sizeof(*v));
        if (v == NULL) {
            free(full);
            d->oom = true;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = full;
}

void sl__diags_free(struct sl__diags *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i]);
    free(d->v);
    memset(d, 0, sizeof(*d));
}

/* Iterative glob with one backtrack point: linear in practice, never
 * exponential, since the request's value is attacker-controlled. */
bool sl__glob_match(const char *pat, const char *s, size_t len)
{
    const char *star = NULL;
    size_t i = 0, mark = 0;

    while (i < len) {
        if (*pat == '*') {
            star = pat++;
            mark = i;
        } else if (*pat != '\0' && *pat == s[i]) {
            pat++;
            i++;
        } else if (star != NULL) {
            pat = star + 1;
            i = ++mark;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}
