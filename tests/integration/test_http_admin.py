# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_http_admin.py - the operator endpoints over HTTP: the rules
database (list, add, replace, delete; applied at once, invalid rules
refused with every diagnostic) and the effective configuration.
"""
from conftest_http import http_sluiced  # noqa: F401 (fixture)

SHOP = """domain: shop
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: {n}
"""
CHECK = {"domain": "shop", "descriptors": [{"user": "u1"}]}


def test_rules_database_round_trip(http_sluiced):
    s = http_sluiced(database=True)
    assert s.json("GET", "/v1/rules")[2] == {"rules": []}
    # Before the rule exists the domain is unknown: allowed, no limit.
    status, _, body = s.json("POST", "/v1/check", CHECK)
    assert status == 200 and body["statuses"][0]["limit"] is None

    status, _, body = s.json("POST", "/v1/rules", {"id": "shop-users", "yaml": SHOP.format(n=1)})
    assert status == 200 and body == {"id": "shop-users", "applied": True}
    assert s.json("POST", "/v1/check", CHECK)[0] == 200
    assert s.json("POST", "/v1/check", CHECK)[0] == 429  # applied at once

    rows = s.json("GET", "/v1/rules")[2]["rules"]
    assert [(r["id"], r["domain"]) for r in rows] == [("shop-users", "shop")]
    assert "requests_per_unit: 1" in rows[0]["yaml"]

    # Adding the same id again is refused; PUT replaces (a changed limit starts fresh).
    assert s.json("POST", "/v1/rules", {"id": "shop-users", "yaml": SHOP.format(n=5)})[0] == 409
    status, _, body = s.json("PUT", "/v1/rules/shop-users", {"yaml": SHOP.format(n=2)})
    assert status == 200 and body["applied"] is True
    status, _, body = s.json("POST", "/v1/check", CHECK)
    assert status == 200 and body["statuses"][0]["quota"] == 2

    status, _, body = s.json("DELETE", "/v1/rules/shop-users")
    assert status == 200 and body == {"deleted": "shop-users", "applied": True}
    status, _, body = s.json("POST", "/v1/check", CHECK)
    assert status == 200 and body["statuses"][0]["limit"] is None
    assert s.json("DELETE", "/v1/rules/shop-users")[0] == 404


def test_rules_invalid_are_refused_with_diagnostics(http_sluiced):
    s = http_sluiced(database=True)
    bad = "domain: shop\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: fortnight\n"
    status, _, body = s.json("POST", "/v1/rules", {"id": "bad", "yaml": bad})
    assert status == 400
    assert body["error"] == "the rule does not validate"
    assert body["diagnostics"] and all(":" in d for d in body["diagnostics"])
    assert s.json("GET", "/v1/rules")[2] == {"rules": []}  # nothing stored
    for req in ({"yaml": SHOP}, {"id": "x"}, [1]):
        assert s.json("POST", "/v1/rules", req)[0] == 400
    assert s.json("PUT", "/v1/rules/", {"yaml": SHOP.format(n=1)})[0] == 400


def test_rules_without_database(http_sluiced):
    s = http_sluiced()
    status, _, body = s.json("GET", "/v1/rules")
    assert status == 409 and "rules.database" in body["error"]


def test_config(http_sluiced):
    s = http_sluiced()
    status, _, cfg = s.json("GET", "/v1/config")
    assert status == 200
    assert cfg["listeners"] == [{"protocols": ["http1", "resp"], "address": "127.0.0.1",
                                 "port": s.port, "admin": False, "serves_admin": True}]
    assert cfg["workers"] == 2
    assert cfg["rules"]["files"][0].endswith("rules.yaml")
    assert cfg["rules"]["database"] is None
    assert cfg["store"]["type"] == "memory" and cfg["store"]["on_full"] == "evict"
    assert cfg["server"]["read_timeout_ms"] == 10000
    assert cfg["test_clock"] is True
