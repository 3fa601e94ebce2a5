/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sim_line.h - the input lines of `sluice simulate` (docs/contracts.md §Interfaces): a JSON
 * object {"t_ms", "domain", "descriptors": [{k: v, ...}], "hits"} per line,
 * and nginx's default "combined" access log lines.
 *
 * Ownership: a parsed line borrows its strings from the text (combined) or
 * from its own cJSON tree (JSON), freed by sl__sim_line_free().
 */
#ifndef SL_CLI_SIM_LINE_H
#define SL_CLI_SIM_LINE_H

#include <cjson/cJSON.h>

#include "sluice.h"

/* Longest input line accepted, in bytes. */
#define SL__SIM_LINE_MAX (64 * 1024)

struct sl__sim_line {
    cJSON *root;
    int64_t t_ms;
    struct sl_entry entries[SL_MAX_DESCRIPTORS][SL_MAX_ENTRIES];
    struct sl_descriptor descs[SL_MAX_DESCRIPTORS];
    struct sl_request req;
};

/* Parse one JSON line. SL_OK, or SL_EPARSE (not one JSON object),
 * SL_EINVAL / SL_ETOOBIG / SL_ERANGE (a field: as POST /v1/check,
 * check_body.h) with a sentence in `err` saying what is wrong. Free with sl__sim_line_free()
 * whatever the result. */
int sl__sim_line_parse(struct sl__sim_line *s, const char *text, size_t len, char *err,
                       size_t err_len);
void sl__sim_line_free(struct sl__sim_line *s);

/* One line of nginx's combined format: $remote_addr - $remote_user
 * [$time_local] "$request" $status $body_bytes_sent "$http_referer"
 * "$http_user_agent". `path` is the request target without its query. */
struct sl__clf {
    struct sl_str remote_address;
    struct sl_str path;
    int64_t t_ms; /* $time_local as Unix ms (1 s resolution) */
};

/* Returns the bytes of `line` consumed, or -1 when it is not a combined
 * line (the caller names the line number). */
long sl__clf_parse(const char *line, size_t len, struct sl__clf *out);

#endif /* SL_CLI_SIM_LINE_H */
