/*
 * proto.c - the table of protocols and the sniffing of a connection's first
 * bytes (as memcached's try_read_command_negotiate does). It does not parse
 * any protocol: each protocol's sniff() judges its own bytes.
 */
#include <stdbool.h>
#include <string.h>

#include "proto.h"

/* More specific sniffers first: HTTP/2's preface and HTTP/1.1's methods
 * before RESP, whose inline commands are any word. */
const struct sl__proto *const sl__protos[] = {
    &sl__proto_http1,
    &sl__proto_resp,
    NULL,
};

const struct sl__proto *sl__proto_find(const char *name, size_t len)
{
    for (size_t i = 0; sl__protos[i] != NULL; i++) {
        const char *n = sl__protos[i]->name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return sl__protos[i];
    }
    return NULL;
}

int sl__proto_sniff(unsigned enabled, const char *buf, size_t len, const struct sl__proto **out)
{
    bool undecided = false;

    for (size_t i = 0; sl__protos[i] != NULL; i++) {
        const struct sl__proto *p = sl__protos[i];
        if (!(enabled & p->bit))
            continue;
        int r = p->sniff(buf, len);
        if (r == 1 && !undecided) {
            *out = p;
            return 1;
        }
        if (r == -2)
            undecided = true; /* a more specific protocol may still claim it */
    }
    return undecided ? -2 : -1;
}
