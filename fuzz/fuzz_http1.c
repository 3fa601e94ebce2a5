/*
 * fuzz_http1.c - libFuzzer driver for HTTP/1.1 request framing: the input is
 * a byte stream on one connection, framed request after request as sluiced
 * does. A taken request must lie inside the input and keep the body cap;
 * a refusal must carry its status; every header of a taken request lies
 * inside it. It does not route requests.
 */
#include <stdint.h>
#include <stdlib.h>

#include "http1_parse.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

static char body[1024];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct sl__h1_req r;
    struct sl__h1_status st;
    struct sl_str hn, hv;
    ssize_t n;

    while (size > 0 && (n = sl__h1_parse(p, size, body, sizeof(body), &r, &st)) > 0) {
        CHECK((size_t)n <= size && r.body.len <= sizeof(body));
        CHECK(r.path.p >= p && r.path.p + r.path.len <= p + n);
        for (size_t at = 0; (at = sl__h1_header_next(&r, at, &hn, &hv)) != 0;)
            CHECK(hn.p >= p && hn.len > 0 && hv.p + hv.len <= p + n);
        p += n;
        size -= (size_t)n;
    }
    CHECK(size == 0 || n == -2 || (n == -1 && st.why != NULL && st.status >= 400));
    return 0;
}
