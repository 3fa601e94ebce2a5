/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_check.c - `sluice check FILE...`: validate rules files together (as
 * the daemon would load them) and print every problem as
 * file:line:col: message. Exit 0 when valid, 1 otherwise (docs/contracts.md §Interfaces).
 * `sluice check -c sluice.yaml`: the daemon's configuration and every rules
 * file it names (listed, or in its rules directories), through the very
 * check `sluiced -t` makes (check.h), so both print the same messages; when
 * valid, the rules' sources it read, one line each.
 *
 * Without -c it does not consult the rules database.
 */
#include <string.h>

#include "check.h"
#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: sluice check FILE...\n"
                 "       sluice check -c sluice.yaml\n\n"
                 "Validate rules files (YAML) as sluiced would load them together. Prints\n"
                 "every problem as FILE:LINE:COL: message on stderr and exits 1; exits 0\n"
                 "and prints a one-line summary when all files are valid.\n\n"
                 "  -c, --config FILE  check sluiced's configuration instead: every key, every\n"
                 "                     rules file it names or its rules directories hold, and\n"
                 "                     its rules database, with the messages of sluiced -t\n"
                 "                     (which it runs the same code as); nothing is written.\n"
                 "                     When valid, lists the rules' sources it read\n");
}

static int check_files(int argc, char **argv)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    int unreadable, rc;

    if (b == NULL)
        return 1;
    unreadable = sl__cli_add_files(b, argv + 1, (size_t)argc - 1);
    sl__cli_print_diags(b);
    rc = unreadable == 0 ? sl_rules_build(b, &r) : SL_EINVAL;
    if (rc == SL_OK)
        printf("ok: %d file%s valid\n", argc - 1, argc == 2 ? "" : "s");
    else if (unreadable == 0 && sl_rules_builder_ndiags(b) == 0)
        fprintf(stderr, "sluice: %s\n", sl_strerror(rc));
    sl_rules_unref(r);
    sl_rules_builder_free(b);
    return rc == SL_OK ? 0 : 1;
}

static int check_config(const char *path)
{
    int rc = sl__check_config(path, stderr, stdout);

    if (rc == 0)
        printf("ok: configuration %s and its rules are valid\n", path);
    else
        fprintf(stderr, "sluice: configuration %s is NOT valid\n", path);
    return rc == 0 ? 0 : 1;
}

static int run(int argc, char **argv)
{
    const char *config = NULL;
    int files = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help(stdout);
            return 0;
        }
        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
            if (i + 1 == argc)
                return sl__cli_usage(&sl__cmd_check, "missing FILE after %s", a);
            config = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return sl__cli_usage(&sl__cmd_check, "unknown option %s", a);
        } else {
            argv[++files] = argv[i]; /* the rules files, packed after argv[0] */
        }
    }
    if (config != NULL && files > 0)
        return sl__cli_usage(&sl__cmd_check, "give either -c FILE or rules files, not both");
    if (config != NULL)
        return check_config(config);
    if (files == 0)
        return sl__cli_usage(&sl__cmd_check, "missing FILE (a rules file, or -c sluice.yaml)");
    return check_files(files + 1, argv);
}

const struct sl__cli_cmd sl__cmd_check = {
    .name = "check",
    .summary =
        "validate rules files, or sluiced's configuration (-c); every error as file:line:col",
    .run = run,
    .help = help,
};
