/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * keytab.c - setting configuration fields from text through a key table
 * (keytab.h): one parser per type, the defaults applied through them, and
 * the --help lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keytab.h"
#include "sluice.h"

const struct sl__key *sl__keytab_find(const struct sl__key *keys, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].path, path) == 0)
            return &keys[i];
    return NULL;
}

int sl__keytab_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int sl__keytab_parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *sfx;
        unsigned shift;
    } units[] = {{"", 0},     {"k", 10}, {"K", 10},   {"KiB", 10}, {"M", 20},
                 {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"kB", 10},  {"MB", 20}};
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].sfx) == 0) {
            if (v > (SIZE_MAX >> units[i].shift))
                return -1;
            *out = (size_t)(v << units[i].shift);
            return 0;
        }
    }
    return -1;
}

static int fail(const struct sl__key *k, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(const struct sl__key *k, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "%s ", k->path);

    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void put_int(void *field, size_t size, uint64_t v)
{
    if (size == 1) {
        uint8_t b = (uint8_t)v;
        memcpy(field, &b, 1);
    } else if (size == 4) {
        uint32_t u = (uint32_t)v;
        memcpy(field, &u, 4);
    } else {
        memcpy(field, &v, 8);
    }
}

static char *dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* A path from the file, resolved against `dir` (malloc'd; NULL: no memory). */
static char *resolve(const char *dir, const char *p)
{
    size_t dlen = dir != NULL ? strlen(dir) : 0, plen = strlen(p);
    char *out;

    if (p[0] == '/' || dlen == 0)
        return dup(p, plen);
    out = malloc(dlen + 1 + plen + 1);
    if (out != NULL) {
        memcpy(out, dir, dlen);
        out[dlen] = '/';
        memcpy(out + dlen + 1, p, plen + 1);
    }
    return out;
}

static int set_string(const struct sl__key *k, void *field, const char *text, const char *dir,
                      char *err, size_t errlen)
{
    char *s = k->type == SL__K_PATH ? resolve(dir, text) : dup(text, strlen(text));
    char *old;

    if (s == NULL)
        return fail(k, err, errlen, "could not be stored: out of memory");
    memcpy(&old, field, sizeof(old));
    free(old);
    memcpy(field, &s, sizeof(s));
    return 0;
}

static int set_choice(const struct sl__key *k, void *field, const char *text, char *err,
                      size_t errlen)
{
    char list[256] = "";
    size_t used = 0;

    for (size_t i = 0; k->choices[i] != NULL; i++) {
        if (strcasecmp(k->choices[i], text) == 0) {
            put_int(field, k->size, i);
            return 0;
        }
        int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", k->choices[i]);
        if (n > 0 && (size_t)n < sizeof(list) - used)
            used += (size_t)n;
    }
    return fail(k, err, errlen, "must be one of %s (got '%s')", list, text);
}

int sl__keytab_set(const struct sl__key *k, void *base, const char *text, const char *dir,
                   char *err, size_t errlen)
{
    void *field = (char *)base + k->off;
    const char *why = NULL;
    uint64_t u, max;
    int64_t ns;

    switch (k->type) {
    case SL__K_UINT:
        max = k->max ? k->max : k->size == 8 ? UINT64_MAX : UINT32_MAX;
        if (sl__keytab_parse_u64(text, max, &u) != 0 || u < k->min)
            return fail(k, err, errlen, "must be a whole number from %llu to %llu (got '%s')",
                        (unsigned long long)k->min, (unsigned long long)max, text);
        put_int(field, k->size, u);
        return 0;
    case SL__K_SIZE:
        if (sl__keytab_parse_size(text, (size_t *)field) != 0)
            return fail(k, err, errlen, "must be a size like 65536, 64KiB or 1MiB (got '%s')",
                        text);
        return 0;
    case SL__K_DUR_MS:
        if (sl_duration_parse(text, strlen(text), &ns) != SL_OK || ns < 0)
            return fail(k, err, errlen, "must be a duration with its unit, e.g. 10s (got '%s')",
                        text);
        ns = ns / SL_NS_PER_MS + (ns % SL_NS_PER_MS != 0);
        memcpy(field, &ns, sizeof(ns));
        return 0;
    case SL__K_BOOL:
        if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
            return fail(k, err, errlen, "must be true or false (got '%s')", text);
        *(bool *)field = text[0] == 't';
        return 0;
    case SL__K_STR:
    case SL__K_PATH:
        return set_string(k, field, text, dir, err, errlen);
    case SL__K_BUF:
        if (strlen(text) >= k->size)
            return fail(k, err, errlen, "is too long (at most %zu bytes; got '%s')", k->size - 1,
                        text);
        memcpy(field, text, strlen(text) + 1);
        return 0;
    case SL__K_PATHBUF: {
        char *r = resolve(dir, text);
        size_t len = r != NULL ? strlen(r) : 0;
        if (r == NULL)
            return fail(k, err, errlen, "could not be stored: out of memory");
        if (len == 0 || len >= k->size) {
            free(r);
            return fail(k, err, errlen, "must be a file path of at most %zu bytes (got '%s')",
                        k->size - 1, text);
        }
        memcpy(field, r, len + 1);
        free(r);
        return 0;
    }
    case SL__K_CHOICE:
        return set_choice(k, field, text, err, errlen);
    case SL__K_CUSTOM:
        if (k->parse(text, field, &why) != 0)
            return fail(k, err, errlen, "%s (got '%s')", why ? why : "is not valid", text);
        return 0;
    }
    return fail(k, err, errlen, "has an unknown type");
}

int sl__keytab_defaults(const struct sl__key *keys, size_t n, void *base)
{
    char err[256];

    for (size_t i = 0; i < n; i++)
        if (keys[i].def != NULL &&
            sl__keytab_set(&keys[i], base, keys[i].def, NULL, err, sizeof(err)) != 0)
            return -1;
    return 0;
}

void sl__keytab_free(const struct sl__key *keys, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++) {
        if (keys[i].type == SL__K_STR || keys[i].type == SL__K_PATH) {
            char *s;
            memcpy(&s, (char *)base + keys[i].off, sizeof(s));
            free(s);
            s = NULL;
            memcpy((char *)base + keys[i].off, &s, sizeof(s));
        }
    }
}

void sl__keytab_help_line(FILE *out, const char *path, const char *def, const char *help)
{
    fprintf(out, "  %-32s %-10s %s\n", path, def != NULL ? def : "(none)", help);
}

void sl__keytab_help(const struct sl__key *keys, size_t n, FILE *out)
{
    for (size_t i = 0; i < n; i++)
        sl__keytab_help_line(out, keys[i].path, keys[i].def ? keys[i].def : keys[i].shown,
                             keys[i].help);
}
