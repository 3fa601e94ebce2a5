/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sim_report.h - output of `sluice simulate`: JSON lines and the summary.
 * The summary owns its names; free it with sl__sim_summary_free().
 */
#ifndef SL_CLI_SIM_REPORT_H
#define SL_CLI_SIM_REPORT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "sluice.h"

struct sl__sim_count {
    char *name;
    uint64_t by_verdict[3]; /* indexed by enum sl_verdict */
};

struct sl__sim_summary {
    struct sl__sim_count *v;
    size_t n;
    size_t cap;
    uint64_t requests;
    uint64_t by_verdict[3];
};

/* One output line (contracts §Interfaces). 0, or -1 when out of memory. */
int sl__sim_print(FILE *out, int64_t t_ms, const struct sl_result *res);
void sl__sim_count(struct sl__sim_summary *s, const struct sl_result *res);
void sl__sim_summary_print(FILE *out, const struct sl__sim_summary *s);
void sl__sim_summary_free(struct sl__sim_summary *s);

#endif /* SL_CLI_SIM_REPORT_H */
