/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_rules.c - `sluice rules add|ls|rm --db FILE`: edit the rules
 * database (rulesdb/). Rules are validated with the same parser as files
 * before they are stored; every problem is printed as id:line:col.
 *
 * It does not tell a running sluiced to reload (the daemon watches the
 * database or is reloaded through its admin API).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rulesdb.h"

struct opts {
    const char *db;
    const char *id;
    bool replace;
    bool full;
    int first_arg; /* index of the first positional argument */
};

static void help(FILE *out)
{
    fprintf(out, "usage: sluice rules add --db FILE [--id ID] [--replace] RULES.yaml|-\n"
                 "       sluice rules ls  --db FILE [--full]\n"
                 "       sluice rules rm  --db FILE ID\n\n"
                 "Edit the rules database. A rule is one YAML document in the rules-file\n"
                 "format for one domain; its id defaults to its domain. 'add' refuses an\n"
                 "existing id unless --replace. Database rules override file rules for the\n"
                 "same domain and descriptor path (docs/rules.md). 'ls' prints id, domain and\n"
                 "last change (Unix ms), tab-separated; --full also prints each rule.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"db", required_argument, NULL, 'd'}, {"id", required_argument, NULL, 'i'},
        {"replace", no_argument, NULL, 'R'},  {"full", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},     {NULL, 0, NULL, 0},
    };
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (c == 'd')
            o->db = optarg;
        else if (c == 'i')
            o->id = optarg;
        else if (c == 'R')
            o->replace = true;
        else if (c == 'F')
            o->full = true;
        else if (c == 'h')
            return -1;
        else
            return 2;
    }
    o->first_arg = optind;
    return o->db == NULL ? 2 : 0;
}

static int add(sl_rulesdb *db, const struct opts *o, int argc, char **argv)
{
    sl_rules_builder *diags;
    char *text, *domain = NULL;
    size_t len;
    int rc;

    if (argc - o->first_arg != 1)
        return 2;
    if (sl__cli_read_file(argv[o->first_arg], &text, &len) != 0)
        return 1;
    diags = sl_rules_builder_new();
    rc = diags ? sl_rulesdb_validate(text, len, argv[o->first_arg], diags, &domain) : SL_ENOMEM;
    if (rc == SL_OK)
        rc = sl_rulesdb_put(db, o->id ? o->id : domain, text, len, o->replace, NULL);
    if (diags != NULL)
        sl__cli_print_diags(diags);
    if (rc != SL_OK && rc != SL_EPARSE)
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
    else if (rc == SL_OK)
        printf("stored rule '%s' (domain %s)\n", o->id ? o->id : domain, domain);
    free(domain);
    free(text);
    sl_rules_builder_free(diags);
    return rc == SL_OK ? 0 : 1;
}

static int print_row(void *arg, const struct sl_rulesdb_row *row)
{
    const struct opts *o = arg;

    printf("%s\t%s\t%lld\n", row->id, row->domain, (long long)row->updated_ms);
    if (o->full)
        printf("%s%s---\n", row->yaml,
               row->yaml[0] && row->yaml[strlen(row->yaml) - 1] == '\n' ? "" : "\n");
    return 0;
}

static int list(sl_rulesdb *db, const struct opts *o, int argc)
{
    if (argc != o->first_arg)
        return 2;
    if (sl_rulesdb_list(db, print_row, (void *)o) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    return 0;
}

static int rm(sl_rulesdb *db, const struct opts *o, int argc, char **argv)
{
    if (argc - o->first_arg != 1)
        return 2;
    if (sl_rulesdb_delete(db, argv[o->first_arg]) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    printf("removed rule '%s'\n", argv[o->first_arg]);
    return 0;
}

static int run(int argc, char **argv)
{
    struct opts o = {0};
    const char *verb = argc > 1 ? argv[1] : "";
    bool is_add = strcmp(verb, "add") == 0;
    char err[512];
    sl_rulesdb *db;
    int rc;

    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
        help(stdout);
        return 0;
    }
    if (!is_add && strcmp(verb, "ls") != 0 && strcmp(verb, "rm") != 0) {
        help(stderr);
        return 2;
    }
    rc = parse_opts(argc - 1, argv + 1, &o);
    if (rc != 0) {
        help(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : 2;
    }
    if (sl_rulesdb_open(o.db, is_add, &db, err, sizeof(err)) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", err);
        return 1;
    }
    if (is_add)
        rc = add(db, &o, argc - 1, argv + 1);
    else if (strcmp(verb, "ls") == 0)
        rc = list(db, &o, argc - 1);
    else
        rc = rm(db, &o, argc - 1, argv + 1);
    sl_rulesdb_close(db);
    if (rc == 2)
        help(stderr);
    return rc;
}

const struct sl__cli_cmd sl__cmd_rules = {
    .name = "rules",
    .summary = "add, list and remove rules in the rules database",
    .run = run,
    .help = help,
};
