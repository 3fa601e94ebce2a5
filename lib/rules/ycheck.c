/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * ycheck.c - typed reads of YAML nodes: booleans, integers, durations,
 * strings, `replaces` lists, metadata, and the known-keys check of a map.
 *
 * Every failure is one diagnostic at the node that is wrong, phrased as what
 * to fix. It does not know which keys belong where (the callers' tables do).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/ycheck.h"

static const char *type_name(const struct sl__ynode *n)
{
    return n->type == SL__Y_MAP ? "a map" : n->type == SL__Y_SEQ ? "a list" : "a scalar";
}

static void list_names(char *buf, size_t len, const char *const *names, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

static bool field_at(const struct sl__ynode *k, const char *const *names, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(k->text, names[i]) == 0) {
            *at = i;
            return true;
        }
    }
    return false;
}

bool sl__y_fields(struct sl__cctx *c, const struct sl__ynode *map, const char *what,
                  const char *const *names, size_t n_names, const struct sl__ynode **vals)
{
    bool ok = true;

    for (size_t i = 0; i < n_names; i++)
        vals[i] = NULL;
    if (map->type != SL__Y_MAP) {
        SL__ERR(c, map, "%s must be a map of keys, not %s", what, type_name(map));
        return false;
    }
    for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
        const struct sl__ynode *k = map->kids[i];
        size_t at;
        if (k->type != SL__Y_SCALAR) {
            SL__ERR(c, k, "keys of %s must be plain names", what);
            ok = false;
        } else if (!field_at(k, names, n_names, &at)) {
            char known[512];
            list_names(known, sizeof(known), names, n_names);
            SL__ERR(c, k, "unknown key '%.64s' in %s; expected one of: %s", k->text, what, known);
            ok = false;
        } else if (vals[at] != NULL) {
            SL__ERR(c, k, "duplicate key '%s' in %s (first given at line %d); keep one", k->text,
                    what, vals[at]->line);
            ok = false;
        } else {
            vals[at] = map->kids[i + 1];
        }
    }
    return ok;
}

static bool want_scalar(struct sl__cctx *c, const struct sl__ynode *n, const char *what)
{
    if (n->type == SL__Y_SCALAR)
        return true;
    SL__ERR(c, n, "%s must be a single value, not %s", what, type_name(n));
    return false;
}

bool sl__y_bool(struct sl__cctx *c, const struct sl__ynode *n, const char *what, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off"};

    if (!want_scalar(c, n, what))
        return false;
    for (size_t i = 0; n->plain && i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(n->text, yes[i]) == 0 || strcmp(n->text, no[i]) == 0) {
            *out = strcmp(n->text, yes[i]) == 0;
            return true;
        }
    }
    SL__ERR(c, n, "%s must be true or false, not '%.64s'", what, n->text);
    return false;
}

static bool digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    return true;
}

bool sl__y_uint(struct sl__cctx *c, const struct sl__ynode *n, const char *what, uint64_t max,
                uint64_t *out)
{
    uint64_t v = 0;

    if (!want_scalar(c, n, what))
        return false;
    if (n->text[0] == '-' && digits(n->text + 1, n->len - 1)) {
        SL__ERR(c, n, "%s must be >= 0, not %s", what, n->text);
        return false;
    }
    if (!n->plain || !digits(n->text, n->len)) {
        SL__ERR(c, n, "%s must be a whole number, not '%.64s'", what, n->text);
        return false;
    }
    for (size_t i = 0; i < n->len; i++) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(n->text[i] - '0'), &v) || v > max) {
            SL__ERR(c, n, "%s is too large (at most %llu)", what, (unsigned long long)max);
            return false;
        }
    }
    *out = v;
    return true;
}

bool sl__y_int(struct sl__cctx *c, const struct sl__ynode *n, const char *what, int64_t *out)
{
    uint64_t v;
    bool neg;
    struct sl__ynode abs;

    if (!want_scalar(c, n, what))
        return false;
    neg = n->text[0] == '-';
    abs = *n;
    abs.text = n->text + neg;
    abs.len = n->len - neg;
    if (!sl__y_uint(c, &abs, what, (uint64_t)INT64_MAX, &v))
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool sl__y_duration(struct sl__cctx *c, const struct sl__ynode *n, const char *what,
                    int64_t *out_ns)
{
    int rc;

    if (!want_scalar(c, n, what))
        return false;
    if (digits(n->text, n->len)) {
        SL__ERR(c, n, "%s '%s' has no unit; write e.g. %sms, %ss or %sm", what, n->text, n->text,
                n->text, n->text);
        return false;
    }
    if (n->text[0] == '-') {
        SL__ERR(c, n, "%s must be >= 0, not %.64s", what, n->text);
        return false;
    }
    rc = sl_duration_parse(n->text, n->len, out_ns);
    if (rc == SL_ERANGE) {
        SL__ERR(c, n, "%s '%.64s' is too long", what, n->text);
        return false;
    }
    if (rc != SL_OK) {
        SL__ERR(c, n,
                "%s '%.64s' is not a duration; write a number and a unit: 250ms, 90s, 5m, "
                "1h, 1d, 1w",
                what, n->text);
        return false;
    }
    return true;
}

bool sl__y_str(struct sl__cctx *c, const struct sl__ynode *n, const char *what, char **out)
{
    if (!want_scalar(c, n, what))
        return false;
    *out = sl__strndup(n->text, n->len);
    if (*out == NULL) {
        c->d->oom = true;
        return false;
    }
    return true;
}

static bool replace_item(struct sl__cctx *c, const struct sl__ynode *it, char **out)
{
    static const char *const names[] = {"name"};
    const struct sl__ynode *v[1];

    if (!sl__y_fields(c, it, "a replaces entry", names, 1, v))
        return false;
    if (v[0] == NULL || (v[0]->type == SL__Y_SCALAR && v[0]->len == 0)) {
        SL__ERR(c, it, "a replaces entry needs a non-empty name: replaces: [{name: other}]");
        return false;
    }
    return sl__y_str(c, v[0], "replaces name", out);
}

bool sl__y_replaces(struct sl__cctx *c, const struct sl__ynode *n, char ***out, size_t *n_out)
{
    char **v;
    bool ok = true;

    if (n->type != SL__Y_SEQ) {
        SL__ERR(c, n, "replaces must be a list: replaces: [{name: other}]");
        return false;
    }
    v = calloc(n->n_kids ? n->n_kids : 1, sizeof(*v));
    if (v == NULL) {
        c->d->oom = true;
        return false;
    }
    for (size_t i = 0; i < n->n_kids; i++)
        ok = replace_item(c, n->kids[i], &v[i]) && ok;
    *out = v;
    *n_out = n->n_kids;
    return ok;
}

/* ---------------------------------------------------------- metadata */

struct buf {
    char *p;
    size_t len;
    size_t cap;
    bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void put_string(struct buf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            put(b, esc, 2);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
            put(b, esc, 6);
        } else {
            put(b, (const char *)&s[i], 1);
        }
    }
    put(b, "\"", 1);
}

static bool json_literal(const struct sl__ynode *n)
{
    static const char *const lits[] = {"true", "false", "null"};
    size_t i = n->text[0] == '-';

    if (!n->plain)
        return false;
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(n->text, lits[k]) == 0)
            return true;
    }
    return digits(n->text + i, n->len - i) && (n->len - i == 1 || n->text[i] != '0');
}

static void to_json(struct buf *b, const struct sl__ynode *n)
{
    if (n->type == SL__Y_SCALAR) {
        if (json_literal(n))
            put(b, n->text, n->len);
        else
            put_string(b, n->text, n->len);
        return;
    }
    put(b, n->type == SL__Y_MAP ? "{" : "[", 1);
    for (size_t i = 0; i < n->n_kids; i++) {
        if (i > 0)
            put(b, n->type == SL__Y_MAP && i % 2 ? ":" : ",", 1);
        if (n->type == SL__Y_MAP && i % 2 == 0)
            put_string(b, n->kids[i]->text ? n->kids[i]->text : "", n->kids[i]->len);
        else
            to_json(b, n->kids[i]);
    }
    put(b, n->type == SL__Y_MAP ? "}" : "]", 1);
}

bool sl__y_json(struct sl__cctx *c, const struct sl__ynode *n, char **out)
{
    struct buf b = {0};

    if (n->type != SL__Y_MAP) {
        SL__ERR(c, n, "metadata must be a map, e.g. metadata: {tier: gold}");
        return false;
    }
    for (size_t i = 0; i < n->n_kids; i += 2) {
        if (n->kids[i]->type != SL__Y_SCALAR) {
            SL__ERR(c, n->kids[i], "metadata keys must be plain names");
            return false;
        }
    }
    to_json(&b, n);
    if (b.oom) {
        free(b.p);
        c->d->oom = true;
        return false;
    }
    *out = b.p;
    return true;
}
