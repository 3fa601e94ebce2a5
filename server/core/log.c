/*
 * log.c - one line per event on stderr: "2026-01-02T03:04:05.678Z info msg".
 * Each line goes out in one write(2) so lines from workers never interleave.
 * It does not buffer, rotate or filter by subsystem.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static atomic_int level = SL__LOG_INFO;

static const char *const names[] = {"error", "warn", "info", "debug"};

void sl__log_set_level(enum sl__log_level lvl)
{
    atomic_store(&level, (int)lvl);
}

bool sl__log_enabled(enum sl__log_level lvl)
{
    return (int)lvl <= atomic_load_explicit(&level, memory_order_relaxed);
}

int sl__log_parse_level(const char *s, size_t len)
{
    for (int i = 0; i < 4; i++)
        if (strlen(names[i]) == len && strncasecmp(names[i], s, len) == 0)
            return i;
    return -1;
}

void sl__log(enum sl__log_level lvl, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    size_t n;
    va_list ap;

    if (!sl__log_enabled(lvl))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ %s ", ts.tv_nsec / 1000000,
                          names[lvl]);
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2;
    /* one event, one line: a message may not smuggle in a newline */
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0)
        return; /* nowhere left to report it */
}
