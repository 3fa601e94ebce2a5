/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * check.h - checking a configuration of sluiced as a start would, changing
 * nothing: the one entry point `sluiced -t` and `sluice check -c` share, so
 * that both say the same about the same file.
 *
 * It does not start anything, bind a configured port, or create a file.
 */
#ifndef SL_SERVER_CHECK_H
#define SL_SERVER_CHECK_H

#include <stdio.h>

/*
 * Check the configuration file `path` (NULL: the defaults): every key of it
 * (the core's, the stores', the rooms'), every rules file it names and the
 * rules database (read if it exists, never created), and that each
 * listener's address can be bound (on a port the kernel picks: the
 * configured one may be in use by the running daemon). Every problem is
 * printed on `out`, one per line, most as "file:line:col: message".
 * Returns 0 when sluiced would start with it, 1 otherwise. `list`, when
 * set, receives the rules' sources the check read (sl__rules_check()) once
 * they are valid. Blocking (files); any thread, but it uses the
 * process-wide protocol registration.
 */
int sl__check_config(const char *path, FILE *out, FILE *list);

#endif /* SL_SERVER_CHECK_H */
