/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * main.c - the `sluice` command line: a table of subcommands, `--help` and
 * `sluice help COMMAND`. Each subcommand lives in its own cmd_*.c.
 *
 * Only `sluice rules --server` and `sluice top` talk to a running sluiced
 * (its admin API).
 */
#include <string.h>

#include "cli.h"

static const struct sl__cli_cmd *const commands[] = {
    &sl__cmd_check,
    &sl__cmd_simulate,
    &sl__cmd_rules,
    &sl__cmd_top,
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sluice COMMAND [ARGS]\n\n"
            "Sluice %s: validate rules, replay traffic through them, edit the rules "
            "database, watch a running sluiced.\n\ncommands:\n",
            SLUICE_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n'sluice COMMAND --help' or 'sluice help COMMAND' for one command.\n");
}

static const struct sl__cli_cmd *find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    const struct sl__cli_cmd *cmd;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("sluice %s\n", SLUICE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0) {
        cmd = argc > 2 ? find(argv[2]) : NULL;
        if (cmd == NULL) {
            usage(argc > 2 ? stderr : stdout);
            return argc > 2 ? 2 : 0;
        }
        cmd->help(stdout);
        return 0;
    }
    cmd = find(argv[1]);
    if (cmd == NULL) {
        if (argv[1][0] == '-')
            fprintf(stderr, "sluice: unknown option %s (options follow a command)\n\n", argv[1]);
        else
            fprintf(stderr, "sluice: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    return cmd->run(argc - 1, argv + 1);
}
