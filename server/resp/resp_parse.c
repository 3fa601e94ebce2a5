/*
 * resp_parse.c - RESP2 request parsing: `*N\r\n` then N `$LEN\r\n...\r\n`
 * bulk strings, or one inline line of space-separated words.
 *
 * It re-parses a partial command from its start when more bytes arrive
 * (commands are small and capped, so this stays cheap) and keeps no state.
 * It does not run commands, and it does not accept RESP3 or the reply types
 * (+, -, :) as requests: a client never sends those.
 */
#include <stdbool.h>
#include <string.h>

#include "resp_parse.h"

/* Longest "*N" or "$N" header line we accept, digits and CRLF included. */
#define HDR_MAX 24

enum { NEED = -2, BAD = -1 };

/* Parse the decimal line after a type byte at buf[*pos]; on success *pos is
 * past its CRLF. Returns 0, NEED or BAD. */
static int parse_len_line(const char *buf, size_t len, size_t *pos, long long *out)
{
    size_t i = *pos + 1;
    long long v = 0;
    bool neg = false, digits = false;
    int ndigits = 0;

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

static ssize_t parse_multibulk(const char *buf, size_t len, size_t max_bytes,
                               struct sl__resp_cmd *cmd)
{
    size_t pos = 0;
    long long n;
    int r = parse_len_line(buf, len, &pos, &n);

    if (r != 0)
        return r;
    if (n < 0 || n > SL__RESP_MAX_ARGS)
        return BAD; /* a null array is no command, and more is abuse */
    cmd->argc = 0;
    for (long long i = 0; i < n; i++) {
        long long blen;
        if (pos >= len)
            return NEED;
        if (buf[pos] != '$')
            return BAD;
        r = parse_len_line(buf, len, &pos, &blen);
        if (r != 0)
            return r;
        /* the whole command, headers included, must fit in max_bytes */
        if (blen < 0 || (unsigned long long)blen > max_bytes || pos + (size_t)blen + 2 > max_bytes)
            return BAD;
        if (pos + (size_t)blen + 2 > len)
            return NEED;
        if (buf[pos + blen] != '\r' || buf[pos + blen + 1] != '\n')
            return BAD;
        cmd->argv[cmd->argc].p = buf + pos;
        cmd->argv[cmd->argc].len = (size_t)blen;
        cmd->argc++;
        pos += (size_t)blen + 2;
    }
    return (ssize_t)pos;
}

static ssize_t parse_inline(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd)
{
    size_t cap = max_bytes < SL__RESP_MAX_INLINE ? max_bytes : SL__RESP_MAX_INLINE;
    size_t scan = len < cap ? len : cap;
    const char *nl = memchr(buf, '\n', scan);
    size_t end, i = 0;

    if (nl == NULL)
        return len >= cap ? BAD : NEED;
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

ssize_t sl__resp_parse(const char *buf, size_t len, size_t max_bytes, struct sl__resp_cmd *cmd)
{
    if (len == 0)
        return NEED;
    if (buf[0] == '*')
        return parse_multibulk(buf, len, max_bytes, cmd);
    if (buf[0] == '$' || buf[0] == '+' || buf[0] == '-' || buf[0] == ':' || buf[0] == '\0')
        return BAD;
    return parse_inline(buf, len, max_bytes, cmd);
}

const char *sl__resp_parse_error(const char *buf, size_t len, size_t max_bytes)
{
    if (len > 0 && buf[0] != '*')
        return memchr(buf, '\n', len) ? "invalid inline request" : "too big inline request";
    return "invalid multibulk request (malformed, too many arguments or too big)";
}
