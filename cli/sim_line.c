/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sim_line.c - parse one JSON input line of `sluice simulate` into an
 * sl_request: its t_ms here, the rest by the reader of POST /v1/check's
 * body (checkbody/check_body.c), with a sentence that says what is wrong.
 *
 * It does not decide anything and does not read a clock: the time is the
 * line's t_ms.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_body.h"
#include "sim_line.h"

#define MAX_T_MS (INT64_MAX / SL_NS_PER_MS)

void sl__sim_line_free(struct sl__sim_line *s)
{
    cJSON_Delete(s->root);
    s->root = NULL;
}

static int bad(char *err, size_t len, int rc, const char *msg)
{
    snprintf(err, len, "%s", msg);
    return rc;
}

static bool whole(const cJSON *n, double lo, double hi)
{
    return cJSON_IsNumber(n) && n->valuedouble >= lo && n->valuedouble <= hi &&
           floor(n->valuedouble) == n->valuedouble;
}

/* t_ms, then the rest as POST /v1/check reads its body (check_body.h), so
 * a line sluiced would refuse is refused here too. */
static int parse_fields(struct sl__sim_line *s, char *err, size_t len)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->root, "t_ms");
    const struct sl__check_body b = {&s->req, s->descs, s->entries};
    int rc;

    if (!whole(t, 0, (double)MAX_T_MS))
        return bad(err, len, SL_ERANGE, "t_ms must be a whole number of Unix milliseconds >= 0");
    if ((rc = sl__check_body_read(s->root, &b, err, len)) != SL_OK)
        return rc;
    s->t_ms = (int64_t)t->valuedouble;
    s->req.now_ns = s->t_ms * SL_NS_PER_MS;
    return SL_OK;
}

int sl__sim_line_parse(struct sl__sim_line *s, const char *text, size_t len, char *err,
                       size_t err_len)
{
    s->root = NULL;
    if (len > SL__SIM_LINE_MAX)
        return bad(err, err_len, SL_ETOOBIG, "line longer than 64 KiB");
    s->root = cJSON_ParseWithLength(text, len);
    if (s->root == NULL)
        return bad(err, err_len, SL_EPARSE, "not valid JSON");
    if (!cJSON_IsObject(s->root))
        return bad(err, err_len, SL_EPARSE, "a line must be one JSON object");
    return parse_fields(s, err, err_len);
}
