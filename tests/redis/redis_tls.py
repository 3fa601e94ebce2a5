# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""redis_tls.py - what the tests of TLS to Redis share: the certificates,
redis-server serving only TLS with an ACL user limited to what Sluice
sends, sluiced's `store.redis.tls` lines, and a check with redis-cli that
a server really speaks TLS (and only TLS).

The certificates are tests/integration/conftest_tls.py's Pki, made with
the openssl command in a temporary directory: a CA (ca), a server
certificate for "localhost" and 127.0.0.1 (server, IP and DNS SANs), a
client certificate (client) and a CA that signed nothing used here
(other_ca). One set serves every server of a test module: each
redis-server, replica, sentinel and cluster node presents the server
certificate and asks for a client certificate from the same CA
(`--tls-auth-clients yes` unless a test says otherwise).

The ACL user (SLUICE_ACL, the line docs/distributed.md "TLS to Redis"
gives) is what the store needs with every engine, Sentinel, a cluster,
rules sync and the hybrid store: the commands it sends (EVALSHA, FCALL,
FUNCTION LOAD and LIST, SCRIPT LOAD, EVAL, SUBSCRIBE, HGETALL, ROLE,
CLUSTER SLOTS, ASKING) and those its scripts call (GET, MGET, SET, DEL,
PUBLISH, TIME, HSET, HINCRBY, INCRBY, PEXPIRE), on `sluice:*` keys and
channels; with the module loaded, its SLUICE.* commands too. Not CONFIG
(the store's maxmemory-policy question is refused and it says so once,
at info) and not MODULE. The default user is off: sluiced gets in as
`sluice` or not at all; the tests themselves log in as `admin`.
"""
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integration"))
from conftest_tls import Pki  # noqa: E402,F401 (tests/integration's)

SLUICE_USER, SLUICE_PASSWORD = "sluice", "sluice-pw"
ADMIN_USER, ADMIN_PASSWORD = "admin", "admin-pw"

SLUICE_COMMANDS = ("+evalsha +script|load +fcall +function|load +function|list +eval "
                   "+get +mget +set +del +publish +time +hset +hincrby +incrby +pexpire "
                   "+subscribe +hgetall +role +cluster|slots +asking")
MODULE_COMMANDS = ("+sluice.version +sluice.check +sluice.peek +sluice.reset +sluice.refund "
                   "+sluice.release")
# (~sluice{* is the cluster's lease index keys: <prefix>{T}:v1:lease:...)
SLUICE_ACL = (f"user {SLUICE_USER} on >{SLUICE_PASSWORD} resetkeys ~sluice:* ~sluice{{* "
              f"resetchannels &sluice:* -@all {SLUICE_COMMANDS}")


def acl_args(module=False):
    """redis-server arguments: the users (module: SLUICE_ACL with the
    module's commands, which Redis only knows once it is loaded)."""
    line = SLUICE_ACL + (" " + MODULE_COMMANDS if module else "")
    # one argument per word: redis-server quotes an argument with spaces
    return (["--user", *line.split()[1:]]
            + ["--user", ADMIN_USER, "on", f">{ADMIN_PASSWORD}", "~*", "&*", "+@all"]
            + ["--user", "default", "off"])


class TlsFiles:
    """The files of one server side and its clients. auth_clients: the
    server asks for a client certificate and refuses a client without
    one (`tls-auth-clients yes`)."""

    def __init__(self, pki, auth_clients=True):
        self.pki = pki
        self.auth_clients = auth_clients
        self.ca = pki.path("ca.pem")
        self.cert, self.key = pki.path("server.pem"), pki.path("server.key")
        self.client_cert, self.client_key = pki.path("client.pem"), pki.path("client.key")

    def server_args(self):
        """redis-server's and redis-sentinel's TLS (after --tls-port)."""
        return ["--tls-cert-file", self.cert, "--tls-key-file", self.key,
                "--tls-ca-cert-file", self.ca,
                "--tls-auth-clients", "yes" if self.auth_clients else "no"]

    def conf_lines(self):
        """The same as configuration-file lines (redis-sentinel's file)."""
        args = self.server_args()
        return "".join(f"{args[i][2:]} {args[i + 1]}\n" for i in range(0, len(args), 2))

    def client_kwargs(self):
        """redis-py's TLS (the client certificate included)."""
        return {"ssl": True, "ssl_ca_certs": self.ca, "ssl_certfile": self.client_cert,
                "ssl_keyfile": self.client_key}

    def cli_args(self, cert=True, ca=None):
        """redis-cli's TLS: the client certificate when `cert`, the CA
        file `ca` of the Pki (default: the one that signed the servers')."""
        return (["--tls", "--cacert", self.pki.path(ca) if ca else self.ca]
                + (["--cert", self.client_cert, "--key", self.client_key] if cert else []))

    def store_yaml(self, cert=True, ca="ca.pem", indent="    ", **more):
        """sluiced's `store.redis.tls` mapping (under `redis:`): the CA
        `ca` of the Pki (None: no ca_file, the system's trust store), the
        client certificate when `cert`, and more keys as given."""
        keys = {}
        if ca is not None:
            keys["ca_file"] = self.pki.path(ca)
        if cert:
            keys["cert_file"], keys["key_file"] = self.client_cert, self.client_key
        keys.update(more)
        if not keys:
            return f"{indent}tls: {{}}\n"
        return f"{indent}tls:\n" + "".join(f"{indent}  {k}: {v}\n" for k, v in keys.items())


def cli_ping(port, tls_args, *more):
    """(exit code, its answer) of `redis-cli TLS_ARGS -p port [more] ping`:
    what it printed, its errors after (without the password warning)."""
    r = subprocess.run(["redis-cli", "--no-auth-warning", *tls_args, "-h", "127.0.0.1",
                        "-p", str(port), *more, "ping"], capture_output=True, timeout=10)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace").strip()


def assert_tls_only(tls, port, *auth):
    """The server at port answers PING over TLS with the client
    certificate (redis-cli, not the code under test); it does not answer
    clear text, a client without a certificate (when it asks for one) or a
    client that trusts another CA."""
    code, out = cli_ping(port, tls.cli_args(), *auth)
    assert code == 0 and out == "PONG", out
    assert "PONG" not in cli_ping(port, [], *auth)[1]
    out = cli_ping(port, tls.cli_args(cert=False), *auth)[1]
    assert ("PONG" in out) != tls.auth_clients, out
    out = cli_ping(port, tls.cli_args(ca="other_ca.pem"), *auth)[1]
    assert "PONG" not in out and "certificate verify failed" in out, out
