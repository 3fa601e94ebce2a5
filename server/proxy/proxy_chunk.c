/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_chunk.c - the chunked transfer coding, decoded one byte of framing
 * at a time and one run of data at a time (proxy_chunk.h). A state per
 * place in the grammar of RFC 9112 §7.1; nothing else is kept.
 */
#include "proxy_chunk.h"

enum {
    S_SIZE,     /* hex digits of a chunk size */
    S_EXT,      /* ;extensions up to CR, ignored */
    S_SIZE_LF,  /* the LF ending a size line */
    S_DATA,     /* `left` bytes of data */
    S_DATA_CR,  /* the CRLF after data */
    S_DATA_LF,  /* its LF */
    S_TRAILER0, /* the start of a trailer line, or the final CRLF */
    S_TRAILER,  /* a trailer line up to CR, dropped */
    S_TRAILER_LF,
    S_END_LF, /* the LF of the final CRLF */
    S_DONE,
};

#define MAX_DIGITS 15 /* sizes below 2^60 */

void sl__proxy_chunk_init(struct sl__proxy_chunk *st)
{
    *st = (struct sl__proxy_chunk){.state = S_SIZE};
}

bool sl__proxy_chunk_done(const struct sl__proxy_chunk *st)
{
    return st->state == S_DONE;
}

static int hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool ctl(unsigned char ch)
{
    return (ch < 0x20 && ch != '\t') || ch == 0x7f;
}

/* One byte of framing: 0, or -1 when it breaks the coding. */
static int frame_byte(struct sl__proxy_chunk *st, unsigned char ch)
{
    int h;

    if (st->state != S_DATA_CR && st->state != S_DATA_LF && ++st->line > SL__PROXY_CHUNK_MAX_LINE)
        return -1;
    switch (st->state) {
    case S_SIZE:
        if ((h = hexval(ch)) >= 0) {
            if (++st->digits > MAX_DIGITS)
                return -1;
            st->left = st->left * 16 + (uint64_t)h;
            return 0;
        }
        if (st->digits == 0 || (ch != ';' && ch != '\r'))
            return -1;
        st->state = ch == ';' ? S_EXT : S_SIZE_LF;
        return 0;
    case S_EXT:
        if (ch == '\r')
            st->state = S_SIZE_LF;
        else if (ctl(ch))
            return -1;
        return 0;
    case S_SIZE_LF:
        if (ch != '\n')
            return -1;
        st->state = st->left > 0 ? S_DATA : S_TRAILER0;
        st->line = 0;
        return 0;
    case S_DATA_CR:
        if (ch != '\r')
            return -1;
        st->state = S_DATA_LF;
        return 0;
    case S_DATA_LF:
        if (ch != '\n')
            return -1;
        *st = (struct sl__proxy_chunk){.state = S_SIZE};
        return 0;
    case S_TRAILER0:
        if (ch == '\r') {
            st->state = S_END_LF;
            return 0;
        }
        if (ch == ' ' || ch == '\t' || ctl(ch))
            return -1; /* obs-fold or garbage */
        st->state = S_TRAILER;
        return 0;
    case S_TRAILER:
        if (ch == '\r')
            st->state = S_TRAILER_LF;
        else if (ctl(ch))
            return -1;
        return 0;
    case S_TRAILER_LF:
        if (ch != '\n')
            return -1;
        st->state = S_TRAILER0; /* `line` keeps counting: it bounds all trailers */
        return 0;
    case S_END_LF:
        if (ch != '\n')
            return -1;
        st->state = S_DONE;
        return 0;
    }
    return -1;
}

ssize_t sl__proxy_chunk_step(struct sl__proxy_chunk *st, const char *p, size_t n, const char **data,
                             size_t *data_len)
{
    size_t i = 0;

    *data = NULL;
    *data_len = 0;
    while (i < n && st->state != S_DONE) {
        if (st->state == S_DATA) {
            size_t take = n - i < st->left ? n - i : (size_t)st->left;
            *data = p + i;
            *data_len = take;
            st->left -= take;
            if (st->left == 0)
                st->state = S_DATA_CR;
            return (ssize_t)(i + take);
        }
        if (frame_byte(st, (unsigned char)p[i]) != 0)
            return -1;
        i++;
    }
    return (ssize_t)i;
}
