/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_cluster.h - the Redis Cluster layer's pure part under the name the
 * tests and fuzzers include: it lives with the link, link/rcluster_map.h.
 */
#ifndef SL_STORE_REDIS_CLUSTER_H
#define SL_STORE_REDIS_CLUSTER_H

#include "rcluster_map.h"

#endif /* SL_STORE_REDIS_CLUSTER_H */
