/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * util.c - usage errors, file reading and diagnostics printing for the
 * `sluice` subcommands. Nothing here decides or parses rules itself.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define FILE_MAX (64 << 20) /* rules files and rule texts: 64 MiB at most */

int sl__cli_usage(const struct sl__cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "sluice %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    cmd->help(stderr);
    return 2;
}

int sl__cli_bad_option(const struct sl__cli_cmd *cmd, int c, char **argv)
{
    char shortopt[3] = {'-', (char)optopt, '\0'};
    /* The word the user typed: getopt_long has stepped past it. A long
     * option is named as typed (--db, not the -d it maps to), without an
     * "=value"; a short one by its letter (it may sit in a cluster). */
    const char *word = optind > 0 ? argv[optind - 1] : NULL;
    bool is_long = word != NULL && strncmp(word, "--", 2) == 0;
    const char *opt = is_long || optopt == 0 ? word : shortopt;
    int n = opt != NULL ? (int)strcspn(opt, "=") : 0;

    if (opt == NULL)
        opt = "?";
    if (c == ':')
        return sl__cli_usage(cmd, "%.*s needs a value", n, opt);
    if (is_long && optopt != 0) /* a known long option given "=value" */
        return sl__cli_usage(cmd, "%.*s takes no value", n, opt);
    return sl__cli_usage(cmd, "unknown option %.*s", n, opt);
}

int sl__cli_read_file(const char *path, char **out, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t cap = 4096, n = 0;
    char *buf = NULL;

    if (f == NULL) {
        fprintf(stderr, "sluice: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        char *b = realloc(buf, cap + 1);
        if (b == NULL)
            break;
        buf = b;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap >= FILE_MAX)
            break;
        cap *= 2;
    }
    bool failed = buf == NULL || ferror(f) || n >= FILE_MAX;
    if (f != stdin)
        fclose(f);
    if (failed) {
        fprintf(stderr, "sluice: %s: cannot read it (or larger than 64 MiB)\n", path);
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int sl__cli_add_files(sl_rules_builder *b, char *const *files, size_t n)
{
    int unreadable = 0;

    for (size_t i = 0; i < n; i++) {
        char *text;
        size_t len;
        if (sl__cli_read_file(files[i], &text, &len) != 0) {
            unreadable++;
            continue;
        }
        sl_rules_builder_add_yaml(b, text, len, files[i], SL_SRC_FILE);
        free(text);
    }
    return unreadable;
}

void sl__cli_print_diags(const sl_rules_builder *b)
{
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        fprintf(stderr, "%s\n", sl_rules_builder_diag(b, i));
}

void sl__cli_iso_ms(int64_t ms, char *out, size_t cap)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    size_t n;

    snprintf(out, cap, "?");
    if (ms < 0 || gmtime_r(&secs, &tm) == NULL ||
        (n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
        return;
    snprintf(out + n, cap - n, ".%03dZ", (int)(ms % 1000));
}
