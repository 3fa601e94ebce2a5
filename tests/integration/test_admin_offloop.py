# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""test_admin_offloop.py - admin writes do not hold up checks.

The admin API's rules writes (SQLite, which may wait for a lock, the
reload, publishing to other nodes) run on libuv's work queue and answer
when done. With one worker and the rules database held locked by another
connection, an admin write stays pending while checks on that same worker
are answered; once the lock goes, the write completes and applies.
"""
import json
import select
import socket
import sqlite3

from conftest_http import http_sluiced  # noqa: F401 (fixture)

RULE = ("domain: late\ndescriptors:\n  - key: k\n"
        "    rate_limit: {unit: minute, requests_per_unit: 1}\n")


def send_admin_post(port, token):
    body = json.dumps({"id": "late", "yaml": RULE}).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /v1/rules HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Authorization: Bearer " + token.encode() + b"\r\n"
                 b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


def read_answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before an answer"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int([h.split(b":")[1] for h in head.split(b"\r\n")
                  if h.lower().startswith(b"content-length:")][0])
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(head.split(b" ", 2)[1]), json.loads(rest[:length])


def test_a_locked_database_does_not_block_checks(http_sluiced):
    s = http_sluiced(database=True, workers=1)
    db = sqlite3.connect(str(s.dir / "rules.db"), timeout=0, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")  # held by "another connection": sluiced's write must wait
    try:
        admin = send_admin_post(s.port, s.token)
        # the write is pending on the work queue; the same worker answers checks
        for i in range(20):
            c = s.conn()
            c.timeout = 1.5
            c.request("POST", "/v1/check",
                      body=json.dumps({"domain": "api", "descriptors": [{"user": f"u{i}"}]}))
            r = c.getresponse()
            assert r.status == 200
            r.read()
            c.close()
        readable, _, _ = select.select([admin], [], [], 0)
        assert not readable, "the admin write answered although the database is locked"
    finally:
        db.execute("ROLLBACK")
        db.close()
    status, body = read_answer(admin)
    admin.close()
    assert status == 200 and body == {"id": "late", "applied": True}, body
    status, _, body = s.json("POST", "/v1/check", {"domain": "late", "descriptors": [{"k": "x"}]})
    assert status == 200 and body["statuses"][0]["limit"] == "late.k", body
