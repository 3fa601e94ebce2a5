# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""The connection side of RESP: what redis-py and redis-cli send on
connect, pipelining (replies in request order), inline commands, QUIT, and
hostile bytes on one connection while another keeps being served."""
import os
import socket
import subprocess

import pytest
import redis

from conftest import recv_until, wait_for


def test_redis_py_handshake_and_connection_commands(sluiced):
    s = sluiced()
    c = s.client(client_name="sluice-test", db=0)  # sends CLIENT SETNAME and SELECT 0
    assert c.ping() is True
    assert c.client_getname() == "sluice-test"
    assert c.echo("hi") == b"hi"
    assert isinstance(c.client_id(), int)
    assert "redis_version" in c.info()
    commands = c.command()  # redis-py parses the COMMAND reply's shape
    assert c.command_count() == len(commands)
    assert commands["cl.throttle"]["arity"] == -1
    assert commands["sl.check"]["arity"] == -5
    assert c.execute_command("CLIENT", "SETINFO", "lib-name", "redis-py") == b"OK"
    hello = c.execute_command("HELLO", 2)
    assert hello[:2] == [b"server", b"sluice"] and hello[4:6] == [b"proto", 2]
    with pytest.raises(redis.ResponseError, match="NOPROTO"):
        c.execute_command("HELLO", 3)
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        c.execute_command("SELECT", 1)


def test_redis_cli_one_shot_and_resp3_handshake(sluiced):
    s = sluiced()
    run = lambda *a: subprocess.run(["redis-cli", "-p", str(s.port), *a], capture_output=True,
                                    text=True, timeout=10)
    assert run("PING").stdout.strip() == "PONG"
    assert run("SL.CHECK", "api", "1", "user", "cli").stdout.split()[0] == "allow"
    # redis-cli -3 sends HELLO 3 first; sluiced answers NOPROTO and redis-cli
    # goes on in RESP2
    out = run("-3", "PING")
    assert "PONG" in out.stdout


def test_redis_cli_interactive_handshake(sluiced):
    """redis-cli on a terminal fetches COMMAND DOCS first; it must still work."""
    s = sluiced()
    # TERM=dumb: linenoise reads plain lines instead of querying the terminal
    env = dict(os.environ, TERM="dumb")
    out = subprocess.run(["script", "-qec", f"redis-cli -p {s.port}", "/dev/null"],
                         input="PING\nCL.THROTTLE tty 1 1 1\nquit\n", capture_output=True,
                         text=True, timeout=10, env=env)
    assert "PONG" in out.stdout
    assert "(integer) 2" in out.stdout  # the limit of max_burst 1


def test_pipeline_replies_in_order(sluiced):
    s = sluiced()
    c = s.client()
    p = c.pipeline(transaction=False)
    for i in range(200):
        p.echo(f"e{i}")
        p.execute_command("CL.THROTTLE", f"pipe{i % 3}", 100, 1, 60)
    out = p.execute()
    echoes = out[0::2]
    throttles = out[1::2]
    assert echoes == [f"e{i}".encode() for i in range(200)]
    # each key counts down independently, in request order
    for k in range(3):
        remaining = [t[2] for i, t in enumerate(throttles) if i % 3 == k]
        assert remaining == list(range(100, 100 - len(remaining), -1))


def test_command_docs_is_an_empty_map(sluiced):
    s = sluiced()
    with s.raw() as sock:
        sock.sendall(b"*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n")
        assert recv_until(sock, lambda d: d.endswith(b"\r\n")) == b"*0\r\n"


def test_raw_pipelining_and_inline(sluiced):
    s = sluiced()
    with s.raw() as sock:
        sock.sendall(b"PING\r\nECHO inline\r\n\r\n*2\r\n$4\r\nECHO\r\n$3\r\nbin\r\n"
                     b"*1\r\n$4\r\nPING\r\n")
        data = recv_until(sock, lambda d: d.count(b"\r\n") >= 6)
        assert data == b"+PONG\r\n$6\r\ninline\r\n$3\r\nbin\r\n+PONG\r\n"


def test_quit_closes_after_reply(sluiced):
    s = sluiced()
    with s.raw() as sock:
        sock.sendall(b"QUIT\r\nPING\r\n")
        assert recv_until(sock, lambda d: False) == b"+OK\r\n"


HOSTILE = [
    b"$5\r\nhello\r\n",                       # a bulk string is no command
    b"*1\r\n$99999999999\r\n",                # length above the frame cap
    b"*99999999\r\n",                          # argument count above the cap
    b"*1\r\n$4\r\nPINGxx",                     # payload longer than declared
    b"*x\r\n",                                 # not a number
    b"\x00\x01\x02garbage",                    # not RESP at all
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_bytes_close_only_that_connection(sluiced, payload):
    s = sluiced()
    good = s.client(single_connection_client=True)
    assert good.ping() is True
    with s.raw() as bad:
        bad.sendall(payload)
        data = recv_until(bad, lambda d: False)  # until the server closes it
        if payload.startswith(b"\x00"):
            assert data == b""  # no protocol claims it: closed without a reply
        else:
            assert data.startswith(b"-ERR Protocol error")
    assert good.ping() is True
    assert good.execute_command("CL.THROTTLE", "after", 1, 1, 1)[0] == 0


def test_oversized_inline_closes(sluiced):
    s = sluiced(extra="server:\n  max_frame_bytes: 4KiB\n")
    good = s.client(single_connection_client=True)
    with s.raw() as bad:
        bad.sendall(b"PING " + b"x" * 8192)
        assert recv_until(bad, lambda d: False).startswith(b"-ERR Protocol error")
    with s.raw() as bad:
        bad.sendall(b"*2\r\n$4\r\nECHO\r\n$5000\r\n")  # declared above the cap: no wait
        assert recv_until(bad, lambda d: False).startswith(b"-ERR Protocol error")
    assert good.ping() is True


def test_truncated_frame_waits_while_others_are_served(sluiced):
    s = sluiced()
    good = s.client(single_connection_client=True)
    with s.raw() as slow:
        slow.sendall(b"*2\r\n$4\r\nECHO\r\n$10\r\nhal")
        assert good.ping() is True  # the other connection is not blocked
        slow.sendall(b"f a msg\r\n")
        assert recv_until(slow, lambda d: d.endswith(b"\r\n") and len(d) >= 17) == \
            b"$10\r\nhalf a msg\r\n"


def test_max_connections_refuses_the_extra_one(sluiced):
    s = sluiced(extra="server:\n  max_connections: 2\n")
    # redis-py connects when the client is made: b only once a is alone
    a = s.client(single_connection_client=True)

    def only_a_is_open():
        # the fixture's readiness probe may still be counted for a moment
        try:
            return a.info()["connected_clients"] == 1
        except redis.ConnectionError:
            return False
    assert wait_for(only_a_is_open), s.log_text()
    b = s.client(single_connection_client=True)
    assert b.ping()
    with s.raw() as extra:
        # accepted and closed at once (nothing sent, so a FIN, not a reset)
        assert recv_until(extra, lambda d: False) == b""
    assert a.ping() and b.ping()  # the two in use are untouched
    assert "server.max_connections is 2" in s.log_text()


def test_redis_benchmark_handshake_and_load(sluiced):
    """redis-benchmark (hiredis inside) asks CONFIG GET first, then pipelines."""
    s = sluiced()
    out = subprocess.run(["redis-benchmark", "-p", str(s.port), "-c", "5", "-n", "2000", "-P", "8",
                          "-r", "100", "--csv", "CL.THROTTLE", "bench:__rand_int__", "1000", "1",
                          "60"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Could not fetch server CONFIG" not in out.stdout + out.stderr
    # 2000 requests over at most 100 keys were really counted
    used = sum(1000 + 1 - s.client().execute_command("CL.THROTTLE", f"bench:{k:012d}", 1000, 1, 60,
                                                       0)[2] for k in range(100))
    assert used == 2000


def test_half_closed_client_still_gets_every_reply(sluiced):
    s = sluiced()
    with s.raw() as sock:
        sock.sendall(b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n" * 5000)
        sock.shutdown(socket.SHUT_WR)  # as `... | nc -q0` does
        data = recv_until(sock, lambda d: False)
        assert data == b"$5\r\nhello\r\n" * 5000
