# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""grpc_fixtures.py - the real sluiced with a gRPC listener, for the tests
of this directory (imported by them: a conftest.py here would shadow
tests/integration's, which this reuses).

`grpc_sluiced` is tests/integration's `http_sluiced` factory with one
listener speaking grpc, resp and http1 on one port (told apart by their
first bytes): gRPC calls and /json, /readyz, the kill switches and the test
clock go to the same port. Started with --test-clock unless told
otherwise, killed by PID at the end.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "integration"))

import pytest  # noqa: E402

from conftest import DEFAULT_RULES  # noqa: E402,F401
from conftest_http import http_sluiced  # noqa: E402,F401


@pytest.fixture
def grpc_sluiced(http_sluiced):  # noqa: F811
    def start(rules=DEFAULT_RULES, extra="", test_clock=True):
        return http_sluiced(rules=rules, extra=extra, test_clock=test_clock,
                            protocols="grpc, resp, http1")
    return start
