/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_simulate.c - `sluice simulate`: replay requests through rules offline
 * with the library's own limiter and table, the clock taken from the input
 * only, so the same input always gives the same output.
 *
 * Input: JSON lines (docs/contracts.md §Interfaces) or nginx's combined
 * access log (--log-format combined, or detected from the first line when
 * --log-format is not given), where each line is one request with three
 * descriptors, [{remote_address: ADDR}], [{path: PATH}] and
 * [{remote_address: ADDR, path: PATH}] (so rules per IP, per path and per
 * IP on a path all apply), in domain --domain (default "nginx"). A bad
 * line is reported on stderr with its number and skipped; the exit status
 * is then 1. When the first WRONG_FORMAT_LINES lines are all bad, the input
 * is in another format: one error naming --log-format, and the run stops.
 * Concurrency limits are not simulated (a trace has no release events):
 * their slots are never given back.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rulesdb.h"
#include "sim_line.h"
#include "sim_report.h"

struct opts {
    char **files;
    size_t n_files;
    const char *db;
    const char *input;
    const char *domain;
    bool summary;
    bool combined;
    bool format_set; /* --log-format given: no detection */
};

static void help(FILE *out)
{
    fprintf(out,
            "usage: sluice simulate -r FILE [-r FILE]... [--db FILE] [--summary]\n"
            "                       [--log-format json|combined] [--domain D] [INPUT]\n\n"
            "Replay requests through rules with the library's limiter; the time comes from\n"
            "the input only. INPUT (default stdin) holds one request per line:\n"
            "  {\"t_ms\": 1700000000000, \"domain\": \"api\", \"descriptors\": "
            "[{\"user\": \"u1\"}], \"hits\": 1}\n"
            "and each gets one line out:\n"
            "  {\"t_ms\":..,\"decision\":\"allow|delay|deny\",\"delay_ms\":..,\"statuses\":[{\n"
            "   \"decision\",\"limit\",\"quota\",\"remaining\",\"reset_ms\",\"retry_after_ms\",\n"
            "   \"shadow_denied\"}]}\n\n"
            "  -r, --rules FILE     rules file (repeatable)\n"
            "      --db FILE        also load the rules database (its rules win)\n"
            "      --summary        print per limit how many were allowed, delayed, denied\n"
            "                       instead of one line per request\n"
            "      --log-format F   json or combined: nginx's access log, giving\n"
            "                       descriptors [{remote_address}] and [{path}]\n"
            "                       (default: combined if the first line is one, else json)\n"
            "      --domain D       domain of combined-log requests (default nginx)\n\n"
            "A bad input line is reported on stderr with its number and skipped; the exit\n"
            "status is then 1. If the first 5 lines are all bad, the input is taken to be\n"
            "in another format: one error, and nothing more is read.\n"
            "Concurrency limits never release (no release events).\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"rules", required_argument, NULL, 'r'},
        {"db", required_argument, NULL, 'd'},
        {"summary", no_argument, NULL, 's'},
        {"log-format", required_argument, NULL, 'f'},
        {"domain", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    o->files = calloc((size_t)argc, sizeof(*o->files));
    if (o->files == NULL)
        return 1;
    o->domain = "nginx";
    optind = 1;
    opterr = 0; /* our own words for a bad option (sl__cli_bad_option) */
    while ((c = getopt_long(argc, argv, ":r:h", longs, NULL)) != -1) {
        if (c == 'r')
            o->files[o->n_files++] = optarg;
        else if (c == 'd')
            o->db = optarg;
        else if (c == 's')
            o->summary = true;
        else if (c == 'D')
            o->domain = optarg;
        else if (c == 'f' && (strcmp(optarg, "combined") == 0 || strcmp(optarg, "json") == 0)) {
            o->combined = strcmp(optarg, "combined") == 0;
            o->format_set = true;
        } else if (c == 'f')
            return sl__cli_usage(&sl__cmd_simulate, "--log-format is json or combined (got '%s')",
                                 optarg);
        else if (c == 'h')
            return -1;
        else
            return sl__cli_bad_option(&sl__cmd_simulate, c, argv);
    }
    if (optind < argc)
        o->input = argv[optind++];
    if (o->n_files == 0 && o->db == NULL)
        return sl__cli_usage(&sl__cmd_simulate, "missing -r FILE (the rules; or --db FILE)");
    if (optind < argc)
        return sl__cli_usage(&sl__cmd_simulate, "unexpected argument '%s' (one INPUT at most)",
                             argv[optind]);
    return 0;
}

static sl_rules *load(const struct opts *o)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;
    int bad;

    if (b == NULL)
        return NULL;
    bad = sl__cli_add_files(b, o->files, o->n_files);
    if (bad == 0 && o->db != NULL) {
        char err[512];
        sl_rulesdb *db;
        int rc = sl_rulesdb_open(o->db, false, &db, err, sizeof(err));
        if (rc != SL_OK) {
            fprintf(stderr, "sluice: %s\n", err);
            bad++;
        } else {
            rc = sl_rulesdb_load(db, b);
            if (rc != SL_OK && rc != SL_EPARSE)
                fprintf(stderr, "sluice: %s\n", sl_rulesdb_errmsg(db));
            sl_rulesdb_close(db);
        }
    }
    sl__cli_print_diags(b);
    if (bad == 0)
        sl_rules_build(b, &r);
    sl_rules_builder_free(b);
    return r;
}

static sl_limiter *new_limiter(void)
{
    static const uint8_t secret[16] = "sluice-simulate";
    struct sl_limiter_config c;
    sl_limiter *lim = NULL;

    sl_limiter_config_init(&c);
    memcpy(c.table.secret, secret, sizeof(c.table.secret));
    c.table.max_bytes = (size_t)256 << 20;
    if (sl_limiter_new(&c, &lim) != SL_OK)
        return NULL;
    return lim;
}

/* Lines that do not parse, at the start of the input, after which the
 * input is taken to be in another format: one error, and the run stops. */
#define WRONG_FORMAT_LINES 5

struct run {
    struct opts *o;
    sl_limiter *lim;
    const sl_rules *rules;
    struct sl__sim_summary sum;
    FILE *out;
    char why[320]; /* why the last line did not parse */
    long good;     /* lines that parsed */
    /* the first lines' parse errors, held until a line parses (then said)
     * or WRONG_FORMAT_LINES of them (then one error instead) */
    char held[WRONG_FORMAT_LINES][340];
    int n_held;
};

static int decide(struct run *r, const struct sl_request *req, int64_t t_ms, long line_no)
{
    struct sl_result res;
    int rc = sl_limiter_check(r->lim, r->rules, req, &res);

    if (rc != SL_OK) {
        fprintf(stderr, "sluice: line %ld: %s\n", line_no, sl_strerror(rc));
        return 1;
    }
    if (r->o->summary)
        sl__sim_count(&r->sum, &res);
    else if (sl__sim_print(r->out, t_ms, &res) != 0)
        return 1;
    return 0;
}

static int one_json(struct run *r, const char *line, size_t len, long line_no)
{
    static struct sl__sim_line s; /* large; one at a time */
    char err[256];
    int rc = sl__sim_line_parse(&s, line, len, err, sizeof(err)), bad = 0;

    if (rc != SL_OK) {
        snprintf(r->why, sizeof(r->why), "line %ld: %s", line_no, err);
        bad = 2;
    } else {
        bad = decide(r, &s.req, s.t_ms, line_no);
    }
    sl__sim_line_free(&s);
    return bad;
}

static int one_combined(struct run *r, const char *line, size_t len, long line_no)
{
    struct sl__clf c;
    struct sl_entry e[4];
    struct sl_descriptor d[3];
    struct sl_request req;

    if (sl__clf_parse(line, len, &c) < 0) {
        snprintf(r->why, sizeof(r->why), "line %ld: not an nginx combined log line", line_no);
        return 2;
    }
    e[0] = (struct sl_entry){{"remote_address", 14}, c.remote_address};
    e[1] = (struct sl_entry){{"path", 4}, c.path};
    e[2] = e[0];
    e[3] = e[1];
    d[0] = (struct sl_descriptor){&e[0], 1, -1, NULL};
    d[1] = (struct sl_descriptor){&e[1], 1, -1, NULL};
    d[2] = (struct sl_descriptor){&e[2], 2, -1, NULL};
    req = (struct sl_request){.domain = {r->o->domain, strlen(r->o->domain)},
                              .descriptors = d,
                              .n_descriptors = 3,
                              .hits = 1,
                              .now_ns = c.t_ms * SL_NS_PER_MS};
    return decide(r, &req, c.t_ms, line_no);
}

/* Without --log-format: the format of the first line (nginx's combined
 * log when it reads as one, and it is said; JSON lines otherwise). */
static void detect(struct run *r, const char *line, size_t len)
{
    struct sl__clf c;
    size_t i = 0;

    r->o->format_set = true;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i < len && line[i] == '{')
        return;
    if (sl__clf_parse(line, len, &c) >= 0) {
        r->o->combined = true;
        fprintf(stderr, "sluice simulate: the input is nginx's combined log format (detected; "
                        "--log-format chooses)\n");
    }
}

/* A line that did not parse: said, or held while no line has parsed yet.
 * Returns false when the input is taken to be in another format. */
static bool parse_error(struct run *r)
{
    if (r->good > 0) {
        fprintf(stderr, "sluice: %s\n", r->why);
        return true;
    }
    snprintf(r->held[r->n_held++], sizeof(r->held[0]), "%s", r->why);
    if (r->n_held < WRONG_FORMAT_LINES)
        return true;
    fprintf(stderr,
            "sluice simulate: the first %d lines are not %s (%s); is the input in another "
            "format? --log-format json|combined says which\n",
            WRONG_FORMAT_LINES, r->o->combined ? "nginx combined log lines" : "JSON request lines",
            r->held[0]);
    return false;
}

static void said_held(struct run *r)
{
    for (int i = 0; i < r->n_held; i++)
        fprintf(stderr, "sluice: %s\n", r->held[i]);
    r->n_held = 0;
}

static int replay(struct run *r, FILE *in)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long line_no = 0;
    int bad = 0, rc;

    while ((n = getline(&line, &cap, in)) >= 0) {
        line_no++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (!r->o->format_set)
            detect(r, line, (size_t)n);
        rc = r->o->combined ? one_combined(r, line, (size_t)n, line_no)
                            : one_json(r, line, (size_t)n, line_no);
        if (rc == 2) {
            bad = 1;
            if (!parse_error(r))
                break;
            continue;
        }
        if (r->good++ == 0)
            said_held(r); /* the input is of this format after all */
        bad |= rc;
    }
    if (r->n_held < WRONG_FORMAT_LINES)
        said_held(r); /* a short input that never parsed: every line said */
    free(line);
    return bad;
}

static int run(int argc, char **argv)
{
    struct opts o = {0};
    struct run r = {.o = &o, .out = stdout};
    FILE *in = stdin;
    int rc = parse_opts(argc, argv, &o);
    sl_rules *rules = NULL;

    if (rc != 0) { /* -1: --help; 2: a usage error, already said */
        if (rc < 0)
            help(stdout);
        free(o.files);
        return rc < 0 ? 0 : rc;
    }
    rules = load(&o);
    r.lim = rules ? new_limiter() : NULL;
    if (o.input != NULL && strcmp(o.input, "-") != 0)
        in = fopen(o.input, "r");
    if (in == NULL)
        fprintf(stderr, "sluice: cannot open %s\n", o.input);
    rc = 1;
    if (rules != NULL && r.lim != NULL && in != NULL) {
        r.rules = rules;
        rc = replay(&r, in);
        if (o.summary)
            sl__sim_summary_print(stdout, &r.sum);
    }
    if (in != NULL && in != stdin)
        fclose(in);
    sl__sim_summary_free(&r.sum);
    sl_limiter_free(r.lim);
    sl_rules_unref(rules);
    free(o.files);
    return rc;
}

const struct sl__cli_cmd sl__cmd_simulate = {
    .name = "simulate",
    .summary = "replay JSON lines or an nginx access log through rules, offline",
    .run = run,
    .help = help,
};
