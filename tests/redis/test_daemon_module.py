# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_daemon_module.py - a fleet where some sluiced use the Redis module
and others the scripts, end to end: they count one limit.

Real processes: a redis-server with $SL_REDIS_MODULE loaded (it must be
set: tests/CMakeLists.txt passes the built sluice-redis.so; nothing is
skipped) and two sluiced, one detecting the module (engine auto), one
forced to EVALSHA (store.redis.engine: script), taking turns on the same
keys: together they admit exactly each algorithm's limit, and Redis saw
both engines' commands. The stored format is one for both paths
(docs/distributed.md); the C differential tests compare them field by field.
"""
import os

from test_daemon_redis import ADMITTED, nodes, rds  # noqa: F401 (pytest fixtures)

assert os.environ.get("SL_REDIS_MODULE"), "SL_REDIS_MODULE must name sluice-redis.so"


def engines(s):
    """Workers per engine, as /metrics says (sluice_store_redis_engine)."""
    return {e: s.metric('sluice_store_redis_engine{engine="%s"}' % e)
            for e in ("module", "function", "script")}


def test_module_and_script_nodes_count_one_limit(rds, nodes):  # noqa: F811
    a, b = nodes("a", engine="auto"), nodes("b", engine="script")
    rds.client.config_resetstat()
    for key, expected in ADMITTED.items():
        verdicts = [(a if i % 2 else b).check("shared", key, "v") for i in range(90)]
        admitted = sum(v != "deny" for v in verdicts)
        assert admitted == expected, (key, verdicts)
    assert rds.calls("SLUICE.CHECK") > 0 and rds.calls("evalsha") > 0
    assert engines(a) == {"module": 1, "function": 0, "script": 0}
    assert engines(b) == {"module": 0, "function": 0, "script": 1}


def test_function_and_module_nodes_count_one_limit(rds, nodes):  # noqa: F811
    a, b = nodes("a", engine="module"), nodes("b", engine="function")
    rds.client.config_resetstat()
    for key, expected in ADMITTED.items():
        verdicts = [(a if i % 2 else b).check("shared", key, "w") for i in range(90)]
        admitted = sum(v != "deny" for v in verdicts)
        assert admitted == expected, (key, verdicts)
    assert rds.calls("SLUICE.CHECK") > 0 and rds.calls("fcall") > 0
    assert engines(a) == {"module": 1, "function": 0, "script": 0}
    assert engines(b) == {"module": 0, "function": 1, "script": 0}
