/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_check.c - `sluice check FILE...`: validate rules files together (as
 * the daemon would load them) and print every problem as
 * file:line:col: message. Exit 0 when valid, 1 otherwise (docs/contracts.md §Interfaces).
 *
 * It does not consult the rules database.
 */
#include <string.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: sluice check FILE...\n\n"
                 "Validate rules files (YAML) as sluiced would load them together. Prints\n"
                 "every problem as FILE:LINE:COL: message on stderr and exits 1; exits 0\n"
                 "and prints a one-line summary when all files are valid.\n");
}

static int run(int argc, char **argv)
{
    sl_rules_builder *b;
    sl_rules *r = NULL;
    int unreadable, rc;

    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        help(stdout);
        return 0;
    }
    if (argc < 2 || (argv[1][0] == '-' && argv[1][1] != '\0')) {
        help(stderr);
        return 2;
    }
    b = sl_rules_builder_new();
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

const struct sl__cli_cmd sl__cmd_check = {
    .name = "check",
    .summary = "validate rules files; every error as file:line:col",
    .run = run,
    .help = help,
};
