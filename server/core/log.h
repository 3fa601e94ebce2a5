/*
 * log.h - sluiced's log: one line per event on stderr, with a UTC time and a
 * level (internal). It does not rotate, buffer or ship logs anywhere: the
 * service manager owns stderr.
 */
#ifndef SL_SERVER_LOG_H
#define SL_SERVER_LOG_H

#include "config-t.h"

/* Lines above this level are dropped. Set once at start, read by all. */
void sl__log_set_level(enum sl__log_level lvl);
bool sl__log_enabled(enum sl__log_level lvl);
/* Parse "error", "warn", "info", "debug"; -1 if unknown. */
int sl__log_parse_level(const char *s, size_t len);

void sl__log(enum sl__log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sl__err(...)  sl__log(SL__LOG_ERROR, __VA_ARGS__)
#define sl__warn(...) sl__log(SL__LOG_WARN, __VA_ARGS__)
#define sl__info(...) sl__log(SL__LOG_INFO, __VA_ARGS__)
#define sl__dbg(...)                                                                               \
    do {                                                                                           \
        if (sl__log_enabled(SL__LOG_DEBUG))                                                        \
            sl__log(SL__LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif /* SL_SERVER_LOG_H */
