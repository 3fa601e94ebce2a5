/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * config_sections.c - the configuration's registration: the names of the
 * protocols a listener may list, and the rooms' configuration sections.
 * What protocols.c registers for the daemon, the configuration needs only
 * by name and key: this file names no room's runtime, so the configuration
 * check (`sluice check -c`, the target sluiced_conf) links every room's
 * keys and checks without their protocols, event loop or libraries.
 *
 * Adding a protocol: its name here, at the place its sl__proto has in
 * sl__protos (protocols.c); the daemon checks that both agree at start.
 */
#include <stddef.h>

#include "config.h"
#include "grpc.h"
#include "proto_name.h"
#include "proxy.h"
#include "stats.h"
#include "xds.h"

const struct sl__proto_name sl__proto_names_reg[] = {
    {"grpc", false, "h2"}, {"http1", false, "http/1.1"}, {"proxy", true, "http/1.1"},
    {"resp", false, NULL}, {NULL, false, NULL},
};

/* Rooms with a configuration section of their own (config.h). */
const struct sl__config_section *const sl__config_sections[] = {
    &sl__proxy_config_section,
    &sl__grpc_config_section,
    &sl__stats_config_section,
    &sl__xds_config_section,
    NULL,
};
