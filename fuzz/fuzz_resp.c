/*
 * fuzz_resp.c - libFuzzer driver for the RESP request parser: any bytes,
 * parsed command after command as a connection would, under a small cap so
 * the cap paths are reached. Checks that every result is in range and every
 * argument lies inside the input.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "resp_parse.h"

static struct sl__resp_cmd cmd;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    size_t off = 0;
    ssize_t n;

    while (off < size && (n = sl__resp_parse(p + off, size - off, 4096, &cmd)) > 0) {
        assert((size_t)n <= size - off && cmd.argc <= SL__RESP_MAX_ARGS);
        for (size_t i = 0; i < cmd.argc; i++)
            assert(cmd.argv[i].p >= p + off && cmd.argv[i].p + cmd.argv[i].len <= p + off + n);
        off += (size_t)n;
    }
    return 0;
}
