/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_parse.c - RESP2 request parsing: `*N\r\n` then N `$LEN\r\n...\r\n`
 * bulk strings, or one inline line of space-separated words.
 *
 * With a resume state (a connection's) it goes on where the previous call
 * stopped: argument headers are read once, and argument bytes are skipped
 * by their declared length, never scanned. Without one it re-parses a
 * partial command from its start (tests, fuzzing).
 * It does not run commands, and it does not accept RESP3 or the reply types
 * (+, -, :) as requests: a client never sends those.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "resp_parse.h"

/* Longest "*N" or "$N" header line we accept, digits and CRLF included. */
#define HDR_MAX 24

enum { NEED = -2, BAD = -1 };

/* Parse the decimal line after a type byte at buf[*pos]; on success *pos is
 * past its CRLF. Returns 0, NEED or BAD. Inlined: it runs once per
 * argument, and its short-line path is a few compares. */
static inline __attribute__((always_inline)) int parse_len_line(const char *buf, size_t len,
                                                                size_t *pos, long long *out)
{
    size_t i = *pos + 1;
    long long v = 0;
    bool neg = false, digits = false;
    int ndigits = 0;

    /* The usual line, one or two digits, whole in the buffer: read at once
     * (what the loop below would read). */
    if (i + 3 < len) {
        unsigned d0 = (unsigned)(unsigned char)buf[i] - '0';
        unsigned d1 = (unsigned)(unsigned char)buf[i + 1] - '0';

        if (d0 <= 9 && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
            *out = d0;
            *pos = i + 3;
            return 0;
        }
        if (d0 <= 9 && d1 <= 9 && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
            *out = d0 * 10 + d1;
            *pos = i + 4;
            return 0;
        }
    }
    if (i < len && buf[i] == '-') {
        neg = true;
        i++;
    }
    for (; i < len; i++) {
        char ch = buf[i];
        if (ch == '\r')
            break;
        /* 18 digits cannot overflow, and every cap is far below them */
        if (ch < '0' || ch > '9' || ++ndigits > 18)
            return BAD;
        v = v * 10 + (ch - '0');
        digits = true;
    }
    if (i + 1 >= len)
        return i - *pos > HDR_MAX ? BAD : NEED;
    if (!digits || buf[i + 1] != '\n')
        return BAD;
    *out = neg ? -v : v;
    *pos = i + 2;
    return 0;
}

/* Keep what a partial command parsed so far for the next call. */
static int save(struct sl__resp_resume *rs, const char *buf, size_t pos, long long n,
                const struct sl__resp_cmd *cmd)
{
    if (rs == NULL)
        return NEED;
    if (rs->args == NULL && cmd->argc > 0) {
        rs->args = malloc(sizeof(*rs->args) * SL__RESP_MAX_ARGS);
        if (rs->args == NULL) {
            rs->pos = 0; /* no memory to keep it: start over next time */
            return NEED;
        }
    }
    for (size_t i = rs->argc; i < cmd->argc; i++) {
        rs->args[i][0] = (uint32_t)(cmd->argv[i].p - buf);
        rs->args[i][1] = (uint32_t)cmd->argv[i].len;
    }
    rs->pos = pos;
    rs->argc = cmd->argc;
    rs->n = n;
    return NEED;
}

static ssize_t parse_multibulk(const char *buf, size_t len, size_t max_bytes,
                               struct sl__resp_cmd *cmd, struct sl__resp_resume *rs)
{
    size_t pos = 0;
    long long n;
    int r;

    if (rs != NULL && rs->pos > 0) { /* go on where the last call stopped */
        pos = rs->pos;
        n = rs->n;
        cmd->argc = rs->argc;
        for (size_t i = 0; i < rs->argc; i++)
            cmd->argv[i] = (struct sl_str){buf + rs->args[i][0], rs->args[i][1]};
    } else {
        r = parse_len_line(buf, len, &pos, &n);
        if (r != 0)
            return r;
        if (n < 0 || n > SL__RESP_MAX_ARGS)
            return BAD; /* a null array is no command, and more is abuse */
        cmd->argc = 0;
    }
    for (long long i = (long long)cmd->argc; i < n; i++) {
        long long blen;
        size_t at = pos;
        if (pos >= len)
            return save(rs, buf, pos, n, cmd);
        if (buf[pos] != '$')
            return BAD;
        r = parse_len_line(buf, len, &pos, &blen);
        if (r == NEED)
            return save(rs, buf, at, n, cmd);
        if (r != 0)
            return r;
        /* the whole command, headers included, must fit in max_bytes */
        if (blen < 0 || (unsigned long long)blen > max_bytes || pos + (size_t)blen + 2 > max_bytes)
            return BAD;
        if (pos + (size_t)blen + 2 > len)
            return save(rs, buf, at, n, cmd);
        if (buf[pos + blen] != '\r' || buf[pos + blen + 1] != '\n')
            return BAD;
        cmd->argv[cmd->argc].p = buf + pos;
        cmd->argv[cmd->argc].len = (size_t)blen;
        cmd->argc++;
        pos += (size_t)blen + 2;
    }
    return (ssize_t)pos;
}

static ssize_t parse_inline(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd,
                            struct sl__resp_resume *rs)
{
    size_t cap = max_bytes < SL__RESP_MAX_INLINE ? max_bytes : SL__RESP_MAX_INLINE;
    size_t scan = len < cap ? len : cap;
    size_t from = rs != NULL && rs->pos <= scan ? rs->pos : 0;
    const char *nl = memchr(buf + from, '\n', scan - from);
    size_t end, i = 0;

    if (rs != NULL)
        rs->scanned += (nl != NULL ? (size_t)(nl - buf) + 1 : scan) - from;
    if (nl == NULL) {
        if (rs != NULL)
            rs->pos = scan; /* the next call searches only what is new */
        return len >= cap ? BAD : NEED;
    }
    end = (size_t)(nl - buf);
    if (end > 0 && buf[end - 1] == '\r')
        end--;
    cmd->argc = 0;
    while (i < end) {
        while (i < end && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        if (i == end)
            break;
        size_t start = i;
        while (i < end && buf[i] != ' ' && buf[i] != '\t')
            i++;
        if (cmd->argc == SL__RESP_MAX_ARGS)
            return BAD;
        cmd->argv[cmd->argc].p = buf + start;
        cmd->argv[cmd->argc].len = i - start;
        cmd->argc++;
    }
    return (ssize_t)(nl - buf) + 1;
}

static ssize_t parse(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd,
                     struct sl__resp_resume *rs)
{
    if (len == 0)
        return NEED;
    if (buf[0] == '*')
        return parse_multibulk(buf, len, max_bytes, cmd, rs);
    if (buf[0] == '$' || buf[0] == '+' || buf[0] == '-' || buf[0] == ':' || buf[0] == '\0')
        return BAD;
    return parse_inline(buf, len, max_bytes, cmd, rs);
}

ssize_t sl__resp_parse(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd)
{
    return parse(buf, len, max_bytes, cmd, NULL);
}

/* Bytes of a multibulk command looked at between `from` and `to`: the
 * headers and each argument's CRLF, never the arguments' own bytes. */
static size_t multibulk_scanned(const struct sl__resp_cmd *cmd, size_t argc_from, size_t from,
                                size_t to)
{
    size_t skipped = 0;

    for (size_t i = argc_from; i < cmd->argc; i++)
        skipped += cmd->argv[i].len;
    return to - from > skipped ? to - from - skipped : 0;
}

ssize_t sl__resp_parse_resume(const char *buf, size_t len, size_t max_bytes,
                              struct sl__resp_cmd *cmd, struct sl__resp_resume *rs)
{
    size_t from = rs->pos, argc_from = rs->argc;
    bool multibulk = len > 0 && buf[0] == '*';
    ssize_t r = parse(buf, len, max_bytes, cmd, rs);

    if (multibulk) {
        size_t to = r > 0 ? (size_t)r : r == NEED ? rs->pos : from;
        rs->scanned += multibulk_scanned(cmd, argc_from, from, to);
    }
    if (r != NEED) { /* complete or refused: the next command starts afresh */
        rs->pos = 0;
        rs->argc = 0;
    }
    return r;
}

void sl__resp_resume_free(struct sl__resp_resume *rs)
{
    free(rs->args);
    rs->args = NULL;
}

const char *sl__resp_parse_error(const char *buf, size_t len, size_t max_bytes)
{
    if (len > 0 && buf[0] != '*')
        return memchr(buf, '\n', len) ? "invalid inline request" : "too big inline request";
    return "invalid multibulk request (malformed, too many arguments or too big)";
}
