# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""proxy_upstream.py PORT [CERT KEY] - a small HTTP/1.1 server for the proxy tests,
run as its own process (so a test can kill and restart it by PID). It
speaks keep-alive, Content-Length and chunked bodies both ways, and
counts the connections it accepted, so a test can tell reuse from
reconnection.

  GET  /_stats                   {"connections": N, "requests": N}
  ANY  /echo...                  JSON of what arrived: method, path, headers,
                                 body_len, body_sha256, body (when < 64 KiB),
                                 received (time.monotonic() when its head was read)
  GET  /download?n=N[&chunked=1] N bytes of a fixed pattern, streamed
  GET  /slow?ms=N                waits N ms, then answers
  GET  /close                    a body delimited by closing the connection
  GET  /ws                       WebSocket handshake, then echoes frames (426
                                 without Upgrade: websocket)
  GET  /ws_as_h2c                answers a WebSocket handshake with a 101 to h2c
  ANY  with Upgrade: h2c         101 Switching Protocols to h2c, then goes on
                                 serving HTTP/1.1 requests on the connection, as
                                 a tunnel past the proxy would carry them (each
                                 counted in /_stats)
  GET  /bad/CASE                 a malformed response (see BAD below)
  GET  /status/CODE              an empty answer with that status
  GET  /arm_drop                 answers, then closes this connection on its
                                 next request without answering (the race of a
                                 keep-alive connection closed under a request)

With CERT and KEY (PEM files) it serves TLS. It prints "ready PORT" once
listening. Loopback only.
"""
import base64
import hashlib
import json
import socket
import socketserver
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

PATTERN = bytes(range(256)) * 256  # 64 KiB

STATS = {"connections": 0, "requests": 0}
LOCK = threading.Lock()

BAD = {
    "cl_te": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "dup_cl": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "obs_fold": b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
    "bare_lf": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    "space_colon": b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
    "te_gzip": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "bad_chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "garbage": b"HELLO THERE\r\n\r\n",
}


def pattern_bytes(n):
    while n > 0:
        k = min(n, len(PATTERN))
        yield PATTERN[:k]
        n -= k


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.drop_next = False

    def fill(self):
        data = self.sock.recv(262144)
        if not data:
            raise EOFError
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        """Yield the next n bytes in pieces."""
        while n > 0:
            if not self.buf:
                self.fill()
            piece, self.buf = self.buf[:n], self.buf[n:]
            n -= len(piece)
            yield piece

    def head(self):
        first = self.line()
        headers = []
        while True:
            line = self.line()
            if not line:
                return first, headers
            name, _, value = line.partition(b":")
            headers.append((name.decode().strip(), value.decode().strip()))

    def body(self, headers):
        h = {k.lower(): v for k, v in headers}
        if h.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():
                        pass
                    return
                yield from self.exact(size)
                self.line()
        elif "content-length" in h:
            yield from self.exact(int(h["content-length"]))


def send_head(sock, status, headers, reason="OK"):
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())


def echo(conn, method, path, headers, received):
    digest, n, kept = hashlib.sha256(), 0, []
    for piece in conn.body(headers):
        digest.update(piece)
        n += len(piece)
        if n < 65536:
            kept.append(piece)
    body = json.dumps({
        "method": method, "path": path, "headers": headers, "body_len": n,
        "body_sha256": digest.hexdigest(),
        "body": b"".join(kept).decode("latin-1") if n < 65536 else None,
        "received": received,
    }).encode()
    send_head(conn.sock, 200, [("Content-Type", "application/json"),
                               ("Content-Length", len(body))])
    conn.sock.sendall(body)


def download(conn, query):
    n = int(query.get("n", ["0"])[0])
    if query.get("chunked", ["0"])[0] == "1":
        send_head(conn.sock, 200, [("Transfer-Encoding", "chunked")])
        for piece in pattern_bytes(n):
            conn.sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        conn.sock.sendall(b"0\r\nX-Trailer: yes\r\n\r\n")
    else:
        send_head(conn.sock, 200, [("Content-Length", n)])
        for piece in pattern_bytes(n):
            conn.sock.sendall(piece)


def ws_frames(conn):
    """Echo WebSocket frames (client frames are masked) until a close."""
    while True:
        b0, b1 = next(conn.exact(1))[0], next(conn.exact(1))[0]
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(b"".join(conn.exact(2)), "big")
        elif n == 127:
            n = int.from_bytes(b"".join(conn.exact(8)), "big")
        mask = b"".join(conn.exact(4)) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(b"".join(conn.exact(n))))
        opcode = b0 & 0x0F
        header = bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else
                                           bytes([126]) + n.to_bytes(2, "big"))
        conn.sock.sendall(header + data)
        if opcode == 8:
            return


def websocket(conn, headers):
    key = dict((k.lower(), v) for k, v in headers)["sec-websocket-key"]
    accept = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    send_head(conn.sock, 101, [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                               ("Sec-WebSocket-Accept", accept)], reason="Switching Protocols")
    ws_frames(conn)


def one_request(conn):
    """Serve one request; False when the connection should close."""
    first, headers = conn.head()
    received = time.monotonic()
    method, target, version = first.decode().split(" ")
    url = urlsplit(target)
    path, query = url.path, parse_qs(url.query)
    with LOCK:
        STATS["requests"] += 1
    h = {k.lower(): v for k, v in headers}
    if conn.drop_next:
        return False
    if "h2c" in h.get("upgrade", "").lower() and "upgrade" in h.get("connection", "").lower():
        send_head(conn.sock, 101, [("Upgrade", "h2c"), ("Connection", "Upgrade")],
                  reason="Switching Protocols")
        return True  # and the "tunnel" carries what follows
    if path == "/arm_drop":
        conn.drop_next = True
        send_head(conn.sock, 200, [("Content-Length", 5)])
        conn.sock.sendall(b"armed")
    elif path == "/_stats":
        for _ in conn.body(headers):
            pass
        body = json.dumps(STATS).encode()
        send_head(conn.sock, 200, [("Content-Length", len(body))])
        conn.sock.sendall(body)
    elif "/echo" in path:
        echo(conn, method, target, headers, received)
    elif path == "/download":
        download(conn, query)
    elif path == "/slow":
        time.sleep(int(query.get("ms", ["1000"])[0]) / 1000)
        send_head(conn.sock, 200, [("Content-Length", 4)])
        conn.sock.sendall(b"slow")
    elif path == "/close":
        send_head(conn.sock, 200, [("Connection", "close")])
        conn.sock.sendall(b"until close")
        return False
    elif path == "/ws" and h.get("upgrade", "").lower() != "websocket":
        send_head(conn.sock, 426, [("Content-Length", 0), ("Upgrade", "websocket")],
                  reason="Upgrade Required")
    elif path == "/ws":
        websocket(conn, headers)
        return False
    elif path == "/ws_as_h2c":
        send_head(conn.sock, 101, [("Upgrade", "h2c"), ("Connection", "Upgrade")],
                  reason="Switching Protocols")
        return True
    elif path.startswith("/bad/"):
        conn.sock.sendall(BAD[path[5:]])
        return False
    elif path.startswith("/status/"):
        send_head(conn.sock, int(path[8:]), [("Content-Length", 0)])
    else:
        send_head(conn.sock, 404, [("Content-Length", 0)])
    return h.get("connection", "").lower() != "close"


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        with LOCK:
            STATS["connections"] += 1
        conn = Conn(self.request)
        try:
            while one_request(conn):
                pass
        except (EOFError, ConnectionError, ValueError, StopIteration):
            pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    tls = None  # an ssl.SSLContext: every accepted connection is TLS

    def get_request(self):
        sock, addr = super().get_request()
        if self.tls is not None:
            sock.settimeout(10)
            sock = self.tls.wrap_socket(sock, server_side=True)  # a failed handshake raises
            sock.settimeout(None)
        return sock, addr


def main():
    port = int(sys.argv[1])
    srv = Server(("127.0.0.1", port), Handler)
    if len(sys.argv) > 3:
        import ssl
        srv.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        srv.tls.load_cert_chain(sys.argv[2], sys.argv[3])
    print(f"ready {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
