/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_rules.c - `sluice rules add|ls|rm`: edit the rules database, either
 * through a running sluiced's admin API (--server URL: the daemon stores,
 * applies and, with rules sync, tells its fleet at once; rules_remote.c)
 * or in the database file itself (--db FILE, rulesdb/: for a stopped
 * server, or a file prepared offline). Rules are validated with the same
 * parser as files before they are sent or stored; every problem is
 * printed as file:line:col.
 *
 * With --db it does not tell a running sluiced to reload (the daemon
 * reloads on SIGHUP; --server is the way to change a running one).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rules_remote.h"
#include "rulesdb.h"

struct opts {
    const char *db;
    const char *server;     /* the admin API's base URL */
    const char *token_file; /* its bearer token, first line */
    const char *id;
    bool replace;
    bool full;
    int first_arg; /* index of the first positional argument */
};

static void help(FILE *out)
{
    fprintf(out,
            "usage: sluice rules add (--server URL [--token-file F] | --db FILE) [--id ID]\n"
            "                        [--replace] RULES.yaml|-\n"
            "       sluice rules ls  (--server URL [--token-file F] | --db FILE) [--full]\n"
            "       sluice rules rm  (--server URL [--token-file F] | --db FILE) ID\n\n"
            "Edit the rules database. A rule is one YAML document in the rules-file\n"
            "format for one domain; its id defaults to its domain. 'add' refuses an\n"
            "existing id unless --replace. Database rules override file rules for the\n"
            "same domain and descriptor path (docs/rules.md). 'ls' prints id, domain and\n"
            "last change (Unix ms), tab-separated; --full also prints each rule.\n\n"
            "  --server URL       a running sluiced's admin API (e.g. http://127.0.0.1:8081):\n"
            "                     it stores and applies the change at once, and with rules\n"
            "                     sync tells every node; use it while sluiced runs\n"
            "  --token-file F     the admin token (admin.token_file), first line of F\n"
            "  --db FILE          the database file itself: for a stopped sluiced (a\n"
            "                     running one sees the change on its next reload only)\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"db", required_argument, NULL, 'd'},
        {"server", required_argument, NULL, 's'},
        {"token-file", required_argument, NULL, 't'},
        {"id", required_argument, NULL, 'i'},
        {"replace", no_argument, NULL, 'R'},
        {"full", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    optind = 1;
    opterr = 0; /* our own words for a bad option (sl__cli_bad_option) */
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (c == 'd')
            o->db = optarg;
        else if (c == 's')
            o->server = optarg;
        else if (c == 't')
            o->token_file = optarg;
        else if (c == 'i')
            o->id = optarg;
        else if (c == 'R')
            o->replace = true;
        else if (c == 'F')
            o->full = true;
        else if (c == 'h')
            return -1;
        else
            return sl__cli_bad_option(&sl__cmd_rules, c, argv);
    }
    o->first_arg = optind;
    if (o->db == NULL && o->server == NULL)
        return sl__cli_usage(&sl__cmd_rules, "missing --db FILE (or --server URL)");
    if (o->db != NULL && o->server != NULL)
        return sl__cli_usage(&sl__cmd_rules, "give --server URL or --db FILE, not both");
    if (o->token_file != NULL && o->server == NULL)
        return sl__cli_usage(&sl__cmd_rules, "--token-file goes with --server URL");
    return 0;
}

/* The positional arguments a verb takes: exactly `want` of them, the
 * first named `what` when missing. 0, or 2 after the usage error. */
static int positional(const struct opts *o, int argc, char **argv, int want, const char *what)
{
    int n = argc - o->first_arg;

    if (n < want)
        return sl__cli_usage(&sl__cmd_rules, "missing %s", what);
    if (n > want)
        return sl__cli_usage(&sl__cmd_rules, "unexpected argument '%s'", argv[o->first_arg + want]);
    return 0;
}

/* Read and validate the rule at `path` (every problem printed as
 * path:line:col). 0 with *text and *domain (malloc'd), or 1. */
static int read_rule(const char *path, char **text, size_t *len, char **domain)
{
    sl_rules_builder *diags;
    int rc;

    if (sl__cli_read_file(path, text, len) != 0)
        return 1;
    diags = sl_rules_builder_new();
    rc = diags ? sl_rulesdb_validate(*text, *len, path, diags, domain) : SL_ENOMEM;
    if (diags != NULL)
        sl__cli_print_diags(diags);
    sl_rules_builder_free(diags);
    if (rc == SL_OK)
        return 0;
    if (rc != SL_EPARSE)
        fprintf(stderr, "sluice: %s: %s\n", path, sl_strerror(rc));
    free(*text);
    *text = NULL;
    return 1;
}

static int add(sl_rulesdb *db, const struct opts *o, const char *text, size_t len,
               const char *domain)
{
    int rc = sl_rulesdb_put(db, o->id ? o->id : domain, text, len, o->replace, NULL);

    if (rc == SL_RULESDB_EEXIST)
        fprintf(stderr, "sluice: rule '%s' already exists in %s; add --replace to replace it\n",
                o->id ? o->id : domain, o->db);
    else if (rc != SL_OK)
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
    else
        printf("stored rule '%s' (domain %s)\n", o->id ? o->id : domain, domain);
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

static int list(sl_rulesdb *db, const struct opts *o)
{
    if (sl_rulesdb_list(db, print_row, (void *)o) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    return 0;
}

static int rm(sl_rulesdb *db, const struct opts *o, char **argv)
{
    if (sl_rulesdb_delete(db, argv[o->first_arg]) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    printf("removed rule '%s'\n", argv[o->first_arg]);
    return 0;
}

/* `verb` on the database file --db (text and domain: add's rule). */
static int on_file(const struct opts *o, const char *verb, char **argv, const char *text,
                   size_t len, const char *domain)
{
    bool is_add = strcmp(verb, "add") == 0;
    char err[512];
    sl_rulesdb *db;
    int rc;

    if (sl_rulesdb_open(o->db, is_add, &db, err, sizeof(err)) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", err);
        return 1;
    }
    if (is_add)
        rc = add(db, o, text, len, domain);
    else if (strcmp(verb, "ls") == 0)
        rc = list(db, o);
    else
        rc = rm(db, o, argv);
    sl_rulesdb_close(db);
    return rc;
}

/* `verb` through the admin API of the sluiced at --server. */
static int on_server(const struct opts *o, const char *verb, char **argv, const char *text,
                     const char *domain)
{
    char token[512];
    struct sl__remote r = {o->server, NULL};

    if (o->token_file != NULL) {
        if (sl__remote_token(o->token_file, token, sizeof(token)) != 0)
            return 1;
        r.token = token;
    }
    if (strcmp(verb, "add") == 0)
        return sl__remote_add(&r, o->id ? o->id : domain, domain, text, o->replace);
    if (strcmp(verb, "ls") == 0)
        return sl__remote_ls(&r, o->full);
    return sl__remote_rm(&r, argv[o->first_arg]);
}

static int run(int argc, char **argv)
{
    struct opts o = {0};
    const char *verb = argc > 1 ? argv[1] : "";
    bool is_add = strcmp(verb, "add") == 0, is_ls = strcmp(verb, "ls") == 0;
    char *text = NULL, *domain = NULL;
    size_t len = 0;
    int rc;

    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
        help(stdout);
        return 0;
    }
    if (*verb == '\0')
        return sl__cli_usage(&sl__cmd_rules, "missing add, ls or rm");
    if (!is_add && !is_ls && strcmp(verb, "rm") != 0)
        return sl__cli_usage(&sl__cmd_rules, "unknown rules command '%s' (add, ls or rm)", verb);
    rc = parse_opts(argc - 1, argv + 1, &o);
    if (rc < 0)
        help(stdout);
    if (rc == 0)
        rc = is_add  ? positional(&o, argc - 1, argv + 1, 1, "RULES.yaml (or - for stdin)")
             : is_ls ? positional(&o, argc - 1, argv + 1, 0, "")
                     : positional(&o, argc - 1, argv + 1, 1, "ID (the rule to remove)");
    if (rc != 0) /* -1: --help; 2: a usage error, already said */
        return rc < 0 ? 0 : rc;
    if (is_add && read_rule(argv[1 + o.first_arg], &text, &len, &domain) != 0)
        return 1;
    rc = o.server != NULL ? on_server(&o, verb, argv + 1, text, domain)
                          : on_file(&o, verb, argv + 1, text, len, domain);
    free(text);
    free(domain);
    return rc;
}

const struct sl__cli_cmd sl__cmd_rules = {
    .name = "rules",
    .summary = "add, list and remove rules in the rules database (a running sluiced's, or a file)",
    .run = run,
    .help = help,
};
