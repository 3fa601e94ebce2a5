/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * yaml_tree.c - turn YAML text into a small tree of nodes that remember the
 * line and column where each starts, so that every later diagnostic can say
 * exactly where the operator has to look.
 *
 * It does not interpret anything (no keys, no types) and refuses aliases,
 * nesting deeper than SL__YAML_MAX_DEPTH and more than SL__YAML_MAX_NODES
 * nodes, so hostile text stays bounded in memory and stack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "rules/rules_int.h"

struct loader {
    yaml_parser_t parser;
    struct sl__ynode *stack[SL__YAML_MAX_DEPTH + 1];
    size_t depth;
    size_t n_nodes;
    struct sl__ynode **docs;
    size_t n_docs;
    size_t cap_docs;
    char *err;
    size_t err_len;
    int line;
    int col;
};

void sl__ynode_free(struct sl__ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n_kids; i++)
        sl__ynode_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

void sl__ydocs_free(struct sl__ynode **docs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sl__ynode_free(docs[i]);
    free(docs);
}

static int fail(struct loader *ld, const yaml_mark_t *m, const char *msg)
{
    snprintf(ld->err, ld->err_len, "%s", msg);
    ld->line = (int)m->line + 1;
    ld->col = (int)m->column + 1;
    return SL_EPARSE;
}

/* Doubling: a list of 40,000 descriptors must not be copied 40,000 times. */
static int add_kid(struct sl__ynode *parent, struct sl__ynode *kid)
{
    void *v = parent->kids;

    if (sl__grow(&v, &parent->cap_kids, parent->n_kids + 1, sizeof(*parent->kids)) != SL_OK)
        return SL_ENOMEM;
    parent->kids = v;
    parent->kids[parent->n_kids++] = kid;
    return SL_OK;
}

/* Attach a finished node to its parent or, at the top, to the documents. */
static int attach(struct loader *ld, struct sl__ynode *n)
{
    void *v = ld->docs;

    if (ld->depth > 0)
        return add_kid(ld->stack[ld->depth - 1], n);
    if (sl__grow(&v, &ld->cap_docs, ld->n_docs + 1, sizeof(*ld->docs)) != SL_OK)
        return SL_ENOMEM;
    ld->docs = v;
    ld->docs[ld->n_docs++] = n;
    return SL_OK;
}

static struct sl__ynode *new_node(struct loader *ld, enum sl__ytype t, const yaml_mark_t *m)
{
    struct sl__ynode *n;

    if (++ld->n_nodes > SL__YAML_MAX_NODES)
        return NULL;
    n = calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL;
    n->type = t;
    n->line = (int)m->line + 1;
    n->col = (int)m->column + 1;
    return n;
}

static int on_scalar(struct loader *ld, const yaml_event_t *ev)
{
    struct sl__ynode *n = new_node(ld, SL__Y_SCALAR, &ev->start_mark);
    size_t len = ev->data.scalar.length;

    if (n == NULL)
        return fail(ld, &ev->start_mark, "too many YAML nodes (or out of memory)");
    n->text = malloc(len + 1);
    if (n->text == NULL) {
        free(n);
        return SL_ENOMEM;
    }
    memcpy(n->text, ev->data.scalar.value, len);
    n->text[len] = '\0';
    n->len = len;
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (attach(ld, n) != SL_OK) {
        sl__ynode_free(n);
        return SL_ENOMEM;
    }
    return SL_OK;
}

static int on_open(struct loader *ld, const yaml_event_t *ev, enum sl__ytype t)
{
    struct sl__ynode *n;

    if (ld->depth >= SL__YAML_MAX_DEPTH)
        return fail(ld, &ev->start_mark, "nesting is too deep");
    n = new_node(ld, t, &ev->start_mark);
    if (n == NULL)
        return fail(ld, &ev->start_mark, "too many YAML nodes (or out of memory)");
    ld->stack[ld->depth++] = n;
    return SL_OK;
}

static int on_close(struct loader *ld)
{
    struct sl__ynode *n = ld->stack[--ld->depth];
    int rc = attach(ld, n);

    if (rc != SL_OK)
        sl__ynode_free(n);
    return rc;
}

/* One event; returns SL_OK, an error, or 1 at the end of the stream. */
static int on_event(struct loader *ld, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_SCALAR_EVENT:
        return on_scalar(ld, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_open(ld, ev, SL__Y_SEQ);
    case YAML_MAPPING_START_EVENT:
        return on_open(ld, ev, SL__Y_MAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return on_close(ld);
    case YAML_ALIAS_EVENT:
        return fail(ld, &ev->start_mark, "YAML aliases are not supported; write the value out");
    default:
        return SL_OK;
    }
}

static void unwind(struct loader *ld)
{
    while (ld->depth > 0)
        sl__ynode_free(ld->stack[--ld->depth]);
    sl__ydocs_free(ld->docs, ld->n_docs);
    ld->docs = NULL;
    ld->n_docs = 0;
}

int sl__yaml_load(const char *text, size_t len, struct sl__ynode ***docs, size_t *n_docs, char *err,
                  size_t err_len, int *line, int *col)
{
    struct loader ld = {.err = err, .err_len = err_len};
    int rc = SL_OK;

    if (!yaml_parser_initialize(&ld.parser))
        return SL_ENOMEM;
    yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);
    while (rc == SL_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ld.parser, &ev)) {
            const char *p = ld.parser.problem ? ld.parser.problem : "invalid YAML";
            rc = fail(&ld, &ld.parser.problem_mark, p);
            break;
        }
        rc = on_event(&ld, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ld.parser);
    if (rc < 0) {
        *line = ld.line;
        *col = ld.col;
        unwind(&ld);
        return rc;
    }
    *docs = ld.docs;
    *n_docs = ld.n_docs;
    return SL_OK;
}
