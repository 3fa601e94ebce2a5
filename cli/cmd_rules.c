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

/* add's rule, read from its file and validated: malloc'd text and domain. */
struct rule {
    char *text;
    size_t len;
    char *domain;
};

/* One verb of `sluice rules`, on either backend: `file` on the database
 * file (--db), `server` through the admin API (--server). Each gets the
 * verb's positional argument (`arg`: NULL for none) and, for a verb that
 * reads a rule, the rule; each returns the command's exit status. */
struct verb {
    const char *name;
    const char *arg; /* the positional argument, as "missing ..." names it; NULL: none */
    bool reads_rule; /* arg is a rules file, read and validated first; --db is created */
    int (*file)(sl_rulesdb *db, const struct opts *o, const struct rule *r, const char *arg);
    int (*server)(const struct sl__remote *rem, const struct opts *o, const struct rule *r,
                  const char *arg);
};

/* Exactly the positional argument `v` takes. 0, or 2 after the usage error. */
static int positional(const struct verb *v, const struct opts *o, int argc, char **argv)
{
    int want = v->arg != NULL, n = argc - o->first_arg;

    if (n < want)
        return sl__cli_usage(&sl__cmd_rules, "missing %s", v->arg);
    if (n > want)
        return sl__cli_usage(&sl__cmd_rules, "unexpected argument '%s'", argv[o->first_arg + want]);
    return 0;
}

/* Read and validate the rule at `path` (every problem printed as
 * path:line:col). 0 with r filled, or 1 with r empty. */
static int read_rule(const char *path, struct rule *r)
{
    sl_rules_builder *diags;
    int rc;

    if (sl__cli_read_file(path, &r->text, &r->len) != 0)
        return 1;
    diags = sl_rules_builder_new();
    rc = diags ? sl_rulesdb_validate(r->text, r->len, path, diags, &r->domain) : SL_ENOMEM;
    if (diags != NULL)
        sl__cli_print_diags(diags);
    sl_rules_builder_free(diags);
    if (rc == SL_OK)
        return 0;
    if (rc != SL_EPARSE)
        fprintf(stderr, "sluice: %s: %s\n", path, sl_strerror(rc));
    free(r->text);
    r->text = NULL;
    return 1;
}

/* The id a rule is stored under: --id, else its domain. */
static const char *id_of(const struct opts *o, const struct rule *r)
{
    return o->id != NULL ? o->id : r->domain;
}

/* ------------------------------------------------------------ on the database file */

static int file_add(sl_rulesdb *db, const struct opts *o, const struct rule *r, const char *arg)
{
    int rc = sl_rulesdb_put(db, id_of(o, r), r->text, r->len, o->replace, NULL);

    (void)arg;
    if (rc == SL_RULESDB_EEXIST)
        fprintf(stderr, "sluice: rule '%s' already exists in %s; add --replace to replace it\n",
                id_of(o, r), o->db);
    else if (rc != SL_OK)
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
    else
        printf("stored rule '%s' (domain %s)\n", id_of(o, r), r->domain);
    return rc == SL_OK ? 0 : 1;
}

static int print_row(void *arg, const struct sl_rulesdb_row *row)
{
    const struct opts *o = arg;

    char when[32];

    sl__cli_iso_ms(row->updated_ms, when, sizeof(when));
    printf("%s\t%s\t%s\n", row->id, row->domain, when);
    if (o->full)
        printf("%s%s---\n", row->yaml,
               row->yaml[0] && row->yaml[strlen(row->yaml) - 1] == '\n' ? "" : "\n");
    return 0;
}

static int file_ls(sl_rulesdb *db, const struct opts *o, const struct rule *r, const char *arg)
{
    (void)r;
    (void)arg;
    if (sl_rulesdb_list(db, print_row, (void *)o) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    return 0;
}

static int file_rm(sl_rulesdb *db, const struct opts *o, const struct rule *r, const char *id)
{
    (void)o;
    (void)r;
    if (sl_rulesdb_delete(db, id) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
        return 1;
    }
    printf("removed rule '%s'\n", id);
    return 0;
}

/* ------------------------------------------------------------ through the admin API */

static int server_add(const struct sl__remote *rem, const struct opts *o, const struct rule *r,
                      const char *arg)
{
    (void)arg;
    return sl__remote_add(rem, id_of(o, r), r->domain, r->text, o->replace);
}

static int server_ls(const struct sl__remote *rem, const struct opts *o, const struct rule *r,
                     const char *arg)
{
    (void)r;
    (void)arg;
    return sl__remote_ls(rem, o->full);
}

static int server_rm(const struct sl__remote *rem, const struct opts *o, const struct rule *r,
                     const char *id)
{
    (void)o;
    (void)r;
    return sl__remote_rm(rem, id);
}

static const struct verb verbs[] = {
    {"add", "RULES.yaml (or - for stdin)", true, file_add, server_add},
    {"ls", NULL, false, file_ls, server_ls},
    {"rm", "ID (the rule to remove)", false, file_rm, server_rm},
};

/* ------------------------------------------------------------ the command */

/* `v` on the database file --db: opened (created by a verb that adds),
 * changed, closed. */
static int on_file(const struct verb *v, const struct opts *o, const struct rule *r,
                   const char *arg)
{
    char err[512];
    sl_rulesdb *db;
    int rc;

    if (sl_rulesdb_open(o->db, v->reads_rule, &db, err, sizeof(err)) != SL_OK) {
        fprintf(stderr, "sluice: %s\n", err);
        return 1;
    }
    rc = v->file(db, o, r, arg);
    sl_rulesdb_close(db);
    return rc;
}

/* `v` through the admin API of the sluiced at --server. */
static int on_server(const struct verb *v, const struct opts *o, const struct rule *r,
                     const char *arg)
{
    char token[512];
    struct sl__remote rem = {o->server, NULL};

    if (o->token_file != NULL) {
        if (sl__remote_token(o->token_file, token, sizeof(token)) != 0)
            return 1;
        rem.token = token;
    }
    return v->server(&rem, o, r, arg);
}

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(verbs[i].name, name) == 0)
            return &verbs[i];
    return NULL;
}

static int run(int argc, char **argv)
{
    struct opts o = {0};
    struct rule r = {0};
    const char *name = argc > 1 ? argv[1] : "", *arg;
    const struct verb *v;
    int rc;

    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        help(stdout);
        return 0;
    }
    if (*name == '\0')
        return sl__cli_usage(&sl__cmd_rules, "missing add, ls or rm");
    if ((v = find_verb(name)) == NULL)
        return sl__cli_usage(&sl__cmd_rules, "unknown rules command '%s' (add, ls or rm)", name);
    rc = parse_opts(argc - 1, argv + 1, &o);
    if (rc < 0)
        help(stdout);
    if (rc == 0)
        rc = positional(v, &o, argc - 1, argv + 1);
    if (rc != 0) /* -1: --help; 2: a usage error, already said */
        return rc < 0 ? 0 : rc;
    arg = v->arg != NULL ? argv[1 + o.first_arg] : NULL;
    if (v->reads_rule && read_rule(arg, &r) != 0)
        return 1;
    rc = o.server != NULL ? on_server(v, &o, &r, arg) : on_file(v, &o, &r, arg);
    free(r.text);
    free(r.domain);
    return rc;
}

const struct sl__cli_cmd sl__cmd_rules = {
    .name = "rules",
    .summary = "add, list and remove rules in the rules database (a running sluiced's, or a file)",
    .run = run,
    .help = help,
};
