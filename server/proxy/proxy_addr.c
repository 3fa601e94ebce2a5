/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_addr.c - client addresses (proxy_addr.h): parsing as forwarding
 * headers write them, CIDR ranges, prefix masks, and the walk over
 * X-Forwarded-For or Forwarded that finds the client behind trusted
 * proxies (nginx's real_ip_recursive, Envoy's trusted hops by address).
 *
 * Forwarded is tokenised with its quoted strings, so a comma or a
 * semicolon inside one does not split an element. Only the right-most 64
 * entries of one header line are looked at: the walk stops at the first
 * untrusted one, and a chain of more than 64 trusted proxies is not a
 * deployment. No allocation.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy_addr.h"

#define MAX_SPANS 64

struct span {
    const char *p;
    size_t n;
};

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static struct span trim(const char *p, size_t n)
{
    while (n > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return (struct span){p, n};
}

static bool all_digits(const char *p, size_t n)
{
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* The address part of s: without brackets and without a port. */
static bool strip_port(struct span *s)
{
    const char *end, *colon;

    if (s->n > 0 && s->p[0] == '[') {
        end = memchr(s->p, ']', s->n);
        if (end == NULL)
            return false;
        if ((size_t)(end - s->p) + 1 < s->n &&
            (end[1] != ':' || !all_digits(end + 2, s->n - (size_t)(end - s->p) - 2)))
            return false;
        *s = (struct span){s->p + 1, (size_t)(end - s->p) - 1};
        return true;
    }
    colon = memchr(s->p, ':', s->n);
    if (colon != NULL && memchr(colon + 1, ':', s->n - (size_t)(colon - s->p) - 1) == NULL) {
        /* one colon: IPv4 with a port */
        if (!all_digits(colon + 1, s->n - (size_t)(colon - s->p) - 1))
            return false;
        s->n = (size_t)(colon - s->p);
    }
    return true;
}

bool sl__proxy_ip_parse(const char *s, size_t n, struct sl__proxy_ip *out)
{
    struct span t = trim(s, n);
    char buf[48];

    memset(out, 0, sizeof(*out));
    if (!strip_port(&t) || t.n == 0 || t.n >= sizeof(buf))
        return false;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    if (memchr(buf, ':', t.n) == NULL) {
        if (inet_pton(AF_INET, buf, out->a) != 1)
            return false;
        out->family = 4;
        return true;
    }
    if (inet_pton(AF_INET6, buf, out->a) != 1)
        return false;
    out->family = 6;
    if (memcmp(out->a, v4_mapped, sizeof(v4_mapped)) == 0) {
        memmove(out->a, out->a + 12, 4);
        memset(out->a + 4, 0, 12);
        out->family = 4;
    }
    return true;
}

static size_t count(const char *p, size_t n, char ch)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += p[i] == ch;
    return k;
}

static unsigned width(const struct sl__proxy_ip *ip)
{
    return ip->family == 4 ? 32 : 128;
}

void sl__proxy_ip_mask(struct sl__proxy_ip *ip, unsigned bits)
{
    unsigned total = width(ip);

    if (bits >= total)
        return;
    ip->a[bits / 8] &= (uint8_t)(0xff00u >> (bits % 8));
    for (unsigned i = bits / 8 + 1; i < total / 8; i++)
        ip->a[i] = 0;
}

bool sl__proxy_cidr_parse(const char *s, struct sl__proxy_cidr *out, const char **why)
{
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    unsigned long bits;
    char *end;

    /* a bare address as inet_pton reads it: no brackets, no port */
    *why = "a trusted proxy is an address or a CIDR range (10.0.0.0/8, 2001:db8::/32)";
    if (alen == 0 || s[0] == '[' || (memchr(s, '.', alen) && count(s, alen, ':') == 1))
        return false;
    if (!sl__proxy_ip_parse(s, alen, &out->ip))
        return false;
    out->bits = (uint8_t)width(&out->ip);
    if (slash != NULL) {
        bits = strtoul(slash + 1, &end, 10);
        if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || bits > width(&out->ip)) {
            *why = out->ip.family == 4 ? "an IPv4 prefix length is 0 to 32"
                                       : "an IPv6 prefix length is 0 to 128";
            return false;
        }
        out->bits = (uint8_t)bits;
    }
    sl__proxy_ip_mask(&out->ip, out->bits);
    return true;
}

bool sl__proxy_cidr_has(const struct sl__proxy_cidr *set, size_t n, const struct sl__proxy_ip *ip)
{
    for (size_t i = 0; i < n; i++) {
        struct sl__proxy_ip m = *ip;
        if (set[i].ip.family != ip->family)
            continue;
        sl__proxy_ip_mask(&m, set[i].bits);
        if (memcmp(m.a, set[i].ip.a, 16) == 0)
            return true;
    }
    return false;
}

size_t sl__proxy_ip_text(const struct sl__proxy_ip *ip, int bits, char *out, size_t cap)
{
    char t[INET6_ADDRSTRLEN];
    size_t n;
    char suffix[8] = "";

    if (inet_ntop(ip->family == 4 ? AF_INET : AF_INET6, ip->a, t, sizeof(t)) == NULL)
        return 0;
    if (bits >= 0) {
        suffix[0] = '/';
        n = 1;
        if (bits >= 100)
            suffix[n++] = (char)('0' + bits / 100);
        if (bits >= 10)
            suffix[n++] = (char)('0' + bits / 10 % 10);
        suffix[n++] = (char)('0' + bits % 10);
        suffix[n] = '\0';
    }
    n = strlen(t) + strlen(suffix);
    if (n >= cap)
        return 0;
    memcpy(out, t, strlen(t));
    memcpy(out + strlen(t), suffix, strlen(suffix) + 1);
    return n;
}

/* ------------------------------------------------------------ the walk */

/* Split a header line on `sep` outside quoted strings (with backslash
 * escapes): the spans, the last MAX_SPANS of them kept in a ring. Returns
 * how many there were. */
static size_t split(struct span v, char sep, struct span *ring)
{
    size_t k = 0, start = 0;
    bool quoted = false;

    for (size_t i = 0; i <= v.n; i++) {
        if (i < v.n && quoted) {
            if (v.p[i] == '\\')
                i++;
            else if (v.p[i] == '"')
                quoted = false;
            continue;
        }
        if (i < v.n && v.p[i] == '"') {
            quoted = true;
            continue;
        }
        if (i == v.n || v.p[i] == sep) {
            ring[k++ % MAX_SPANS] = trim(v.p + start, (i < v.n ? i : v.n) - start);
            start = i + 1;
        }
    }
    return k;
}

/* The `for=` address of one Forwarded element. */
static bool forwarded_for(struct span el, struct sl__proxy_ip *out)
{
    struct span pairs[MAX_SPANS];
    size_t k = split(el, ';', pairs), first = k > MAX_SPANS ? k - MAX_SPANS : 0;
    char buf[64];
    size_t n = 0;

    for (size_t i = first; i < k; i++) {
        struct span pr = pairs[i % MAX_SPANS];
        const char *eq = memchr(pr.p, '=', pr.n);
        struct span name, val;
        if (eq == NULL)
            continue;
        name = trim(pr.p, (size_t)(eq - pr.p));
        if (name.n != 3 || strncasecmp(name.p, "for", 3) != 0)
            continue;
        val = trim(eq + 1, pr.n - (size_t)(eq - pr.p) - 1);
        if (val.n >= 2 && val.p[0] == '"' && val.p[val.n - 1] == '"') {
            for (size_t j = 1; j + 1 < val.n && n < sizeof(buf); j++) {
                if (val.p[j] == '\\' && j + 2 < val.n)
                    j++;
                buf[n++] = val.p[j];
            }
            val = (struct span){buf, n};
        }
        return sl__proxy_ip_parse(val.p, val.n, out);
    }
    return false;
}

static bool entry_ip(struct span e, enum sl__proxy_client_header which, struct sl__proxy_ip *out)
{
    return which == SL__PROXY_FORWARDED ? forwarded_for(e, out) : sl__proxy_ip_parse(e.p, e.n, out);
}

void sl__proxy_client_ip(const struct sl__proxy_ip *peer, const struct sl__proxy_head *h,
                         enum sl__proxy_client_header which, const struct sl__proxy_cidr *trusted,
                         size_t n, struct sl__proxy_ip *out)
{
    const char *name = which == SL__PROXY_FORWARDED ? "forwarded" : "x-forwarded-for";
    struct span ring[MAX_SPANS];

    *out = *peer;
    if (n == 0 || !sl__proxy_cidr_has(trusted, n, out))
        return;
    for (unsigned i = h->n_hdrs; i-- > 0;) {
        const struct sl__proxy_hdr *hd = &h->hdrs[i];
        size_t k, first;
        if (!sl__proxy_ieq(hd->name, name))
            continue;
        k = split((struct span){hd->value.p, hd->value.len}, ',', ring);
        first = k > MAX_SPANS ? k - MAX_SPANS : 0;
        for (size_t j = k; j-- > first;) {
            struct sl__proxy_ip ip;
            if (ring[j % MAX_SPANS].n == 0)
                continue; /* "a, , b": nothing written there */
            if (!entry_ip(ring[j % MAX_SPANS], which, &ip))
                return;
            *out = ip;
            if (!sl__proxy_cidr_has(trusted, n, out))
                return;
        }
    }
}
