/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cli.h - what the `sluice` subcommands share: the command table entry and
 * the helpers that read files and build a rules snapshot from them (with
 * every diagnostic printed).
 *
 * Exit codes of every command: 0 success, 1 the input is invalid or the
 * operation failed (a message on stderr says why), 2 usage error.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <stdio.h>

#include "sluice.h"

struct sl__cli_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
    void (*help)(FILE *out);
};

extern const struct sl__cli_cmd sl__cmd_check;
extern const struct sl__cli_cmd sl__cmd_simulate;
extern const struct sl__cli_cmd sl__cmd_rules;
extern const struct sl__cli_cmd sl__cmd_top;

/* A usage error of `cmd`: "sluice CMD: WHAT" on stderr, saying what is
 * wrong, then a blank line and the command's help. Returns 2, the usage
 * exit status. */
/* A Unix time in ms as ISO 8601 in UTC, to the millisecond
 * ("2026-12-02T06:45:29.000Z"); "?" for a time before 1970. */
void sl__cli_iso_ms(int64_t ms, char *out, size_t cap);
int sl__cli_usage(const struct sl__cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The usage error for what getopt_long() returned on a bad option (`c`
 * '?' for an unknown option, ':' for one missing its value; the option
 * string must start with ':' and opterr be 0). Returns 2. */
int sl__cli_bad_option(const struct sl__cli_cmd *cmd, int c, char **argv);

/* Read a whole file ("-" is stdin) into a NUL-terminated malloc'd buffer.
 * 0, or -1 with a message on stderr. */
int sl__cli_read_file(const char *path, char **out, size_t *len);

/* Add each file to `b` as SL_SRC_FILE; returns how many could not be read. */
int sl__cli_add_files(sl_rules_builder *b, char *const *files, size_t n);

/* Print every diagnostic of `b` on stderr, one per line. */
void sl__cli_print_diags(const sl_rules_builder *b);

#endif /* SL_CLI_H */
