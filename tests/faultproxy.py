"""A fault-injecting HTTP proxy in front of the moto S3 server: faults as production sees them.

The failures that matter to a commit protocol happen *between* a client and the object store. A PUT
is applied but its reply is lost (a load balancer's reset, a broken link): the SDK retries, and a
conditional PUT (``If-None-Match: *``) retried after its own success is refused with 412, so the
writer thinks it lost a race it won. Stores throttle (503 SlowDown) and fail (500 InternalError),
connections break before a request arrives, replies are slow. Mocking the SDKs fakes none of this
faithfully: the real clients (pyarrow's S3FileSystem, i.e. the AWS C++ SDK over curl, and boto3)
must get the bytes production sends them and run their own retry logic.

``FaultProxy(upstream_url)`` serves on loopback at ``.url``: a thread per client connection, kept
alive (HTTP/1.1; moto's ``Connection: close`` is dropped, as S3 keeps connections), ``Expect:
100-continue`` answered by the proxy; each request is forwarded byte-exact (framed by Content-Length
or chunked, so aws-chunked SigV4 payloads pass untouched) on a fresh upstream connection. A rule
(``.add``) takes a method (``"*"``: any) and a regex searched in the URL-decoded path, which starts
with the bucket (path-style; the query is forwarded, not matched). The first rule to fire acts:

- ``drop_reply``: forward, read the store's whole reply (the side effect has happened), then reset
  the client's connection (TCP RST) without sending a byte of it;
- ``status``: answer ``status`` (503 SlowDown by default, 500 InternalError, ...) with S3's XML error;
- ``reset``: reset the connection before forwarding: the store never sees the request;
- ``delay``: sleep ``seconds``, then forward.

A rule fires ``times`` times (None: unlimited), after letting its first ``skip`` matches through,
and with ``probability`` if given (drawn from ``random.Random(seed)``). Fired faults are appended to
``.fired``. Rules are set from the test's process, which owns the proxy; worker processes just use
``.url``. Fixture ``faulty_s3``: the proxy in front of ``s3_endpoint`` (one per server, kept for the
session), with no rules and an empty log.
"""
import base64
import contextlib
import os
import random
import re
import socket
import socketserver
import struct
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus

import pytest

ACTIONS = ("drop_reply", "status", "reset", "delay")
S3_ERRORS = {500: ("InternalError", "We encountered an internal error. Please try again."),
             503: ("SlowDown", "Please reduce your request rate.")}


@dataclass
class Rule:
    method: str
    path: re.Pattern
    action: str
    times: int | None = 1
    probability: float | None = None
    skip: int = 0
    seconds: float | None = None
    status: int | None = None
    rng: random.Random = field(default_factory=random.Random, repr=False)
    matched: int = 0   # requests that matched method and path
    count: int = 0     # of which it fired on

    def fires(self, method: str, path: str) -> bool:   # under the proxy's lock
        if self.method not in ("*", method) or not self.path.search(path):
            return False
        self.matched += 1
        fire = (self.matched > self.skip and (self.times is None or self.count < self.times)
                and (self.probability is None or self.rng.random() < self.probability))
        self.count += fire
        return fire


@dataclass(frozen=True)
class Fired:
    method: str
    path: str
    action: str
    status: int | None   # the store's (drop_reply, delay), the injected one (status), None (reset)


class FaultProxy:
    def __init__(self, upstream_url: str, timeout: float = 60.0):
        u = urllib.parse.urlsplit(upstream_url)
        self.upstream = (u.hostname, u.port or 80)
        self.timeout = timeout
        self.fired: list[Fired] = []
        self.connections = 0   # client connections accepted
        self.requests = 0      # requests read from clients
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True, name="faultproxy").start()

    def add(self, method: str, path_regex: str, action: str, times: int | None = 1,
            probability: float | None = None, skip: int = 0, seconds: float | None = None,
            status: int | None = None, seed: int = 0) -> Rule:
        """A rule, tried after those already added; returned so its ``count`` can be read."""
        if action not in ACTIONS:
            raise ValueError(f"action {action!r} is not one of {ACTIONS}")
        if action == "delay" and seconds is None:
            raise ValueError("a delay needs seconds")
        rule = Rule(method.upper(), re.compile(path_regex), action, times, probability, skip, seconds,
                    (status or 503) if action == "status" else status, random.Random(seed))
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        """Remove every rule (the log of fired faults stays: empty it with ``fired.clear()``)."""
        with self._lock:
            self._rules.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for sock in self._open:   # wake the threads waiting on idle keep-alive connections
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _rule(self, method: str, path: str) -> Rule | None:
        with self._lock:
            self.requests += 1
            return next((r for r in self._rules if r.fires(method, path)), None)

    def _forward(self, head: bytes, body: bytes, method: str) -> tuple[bytes, bytes, bool]:
        """The store's reply to the request: (head, body as framed, whether it ended at EOF)."""
        with socket.create_connection(self.upstream, timeout=self.timeout) as up, up.makefile("rb") as f:
            up.sendall(head)
            up.sendall(body)
            while True:   # 100 Continue to the Expect the proxy answered itself: not forwarded
                rhead = _read_head(f)
                if rhead is None:
                    raise ConnectionError("the store closed the connection without a reply")
                status = int(rhead.split(None, 2)[1])
                if not 100 <= status < 200:
                    break
            h = _headers(rhead)
            if method == "HEAD" or status in (204, 304):
                return rhead, b"", False
            if "content-length" in h or "chunked" in h.get("transfer-encoding", "").lower():
                return rhead, _read_body(f, h), False
            return rhead, f.read(), True


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        proxy, sock = self.server.proxy, self.request
        with proxy._lock:
            proxy.connections += 1
            proxy._open.add(sock)
        f = sock.makefile("rb")
        try:
            while self.exchange(proxy, sock, f):
                pass
        except (OSError, ValueError):   # the client or the store went away, or sent garbage
            pass
        finally:
            with proxy._lock:
                proxy._open.discard(sock)
            f.close()

    def exchange(self, proxy: FaultProxy, sock: socket.socket, f) -> bool:
        """Serve one request; whether the connection stays open for another."""
        head = _read_head(f)
        if head is None:
            return False
        method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        h = _headers(head)
        path = urllib.parse.unquote(urllib.parse.urlsplit(target).path)
        rule = proxy._rule(method, path)
        action = rule.action if rule else None
        if action == "reset":
            proxy.fired.append(Fired(method, path, action, None))
            _reset(sock, f)
            return False
        if h.get("expect", "").lower() == "100-continue":
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = _read_body(f, h)
        if action == "status":
            proxy.fired.append(Fired(method, path, action, rule.status))
            sock.sendall(_s3_error(rule.status, method))
            return _keep_alive(version, h)
        if action == "delay":
            time.sleep(rule.seconds)
        rhead, rbody, at_eof = proxy._forward(head, body, method)
        if action:
            proxy.fired.append(Fired(method, path, action, int(rhead.split(None, 2)[1])))
        if action == "drop_reply":
            _reset(sock, f)
            return False
        if not at_eof:   # moto (werkzeug) closes after every reply; S3 keeps connections open
            rhead = b"\r\n".join(x for x in rhead.split(b"\r\n") if not x.lower().startswith(b"connection:"))
        sock.sendall(rhead)
        sock.sendall(rbody)
        return not at_eof and _keep_alive(version, h)


def _keep_alive(version: str, headers: dict[str, str]) -> bool:
    return version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()


def _reset(sock: socket.socket, f) -> None:
    """Close with a TCP RST (linger 0), as a broken link or a load balancer does."""
    f.close()   # else the makefile's reference keeps the socket open
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _read_head(f) -> bytes | None:
    """A message's head, through its blank line; None at EOF before its first byte."""
    lines: list[bytes] = []
    while True:
        line = f.readline(65536)
        if not line and not lines:
            return None
        if not line.endswith(b"\n"):
            raise ConnectionError("connection closed inside a message head")
        if line.strip() or lines:   # (a stray CRLF between messages is skipped)
            lines.append(line)
        if lines and not line.strip():
            return b"".join(lines)


def _headers(head: bytes) -> dict[str, str]:
    out = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            out[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    return out


def _read_body(f, headers: dict[str, str]) -> bytes:
    """The body as sent, chunk framing and trailers included."""
    if "chunked" not in headers.get("transfer-encoding", "").lower():
        return _read_exact(f, int(headers.get("content-length", "0")))
    parts = [_read_line(f)]
    while size := int(parts[-1].split(b";")[0], 16):
        parts += [_read_exact(f, size + 2), _read_line(f)]   # the data and its CRLF, the next size
    while parts[-1].strip():   # trailers (aws-chunked checksums), then a blank line
        parts.append(_read_line(f))
    return b"".join(parts)


def _read_line(f) -> bytes:
    line = f.readline(65536)
    if not line.endswith(b"\n"):
        raise ConnectionError("connection closed inside a chunked body")
    return line


def _read_exact(f, n: int) -> bytes:
    data = f.read(n)
    if len(data) < n:
        raise ConnectionError("connection closed inside a body")
    return data


def _s3_error(status: int, method: str) -> bytes:
    """An error reply as S3 sends it (the SDKs classify it by status and code; sizes matter too)."""
    phrase = HTTPStatus(status).phrase
    code, message = S3_ERRORS.get(status, (phrase.replace(" ", ""), phrase))
    rid, host_id = uuid.uuid4().hex[:16].upper(), base64.b64encode(os.urandom(57)).decode()
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>{rid}</RequestId><HostId>{host_id}</HostId></Error>").encode()
    head = (f"HTTP/1.1 {status} {phrase}\r\nx-amz-request-id: {rid}\r\nx-amz-id-2: {host_id}\r\n"
            f"Content-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
            f"Date: {formatdate(usegmt=True)}\r\nServer: AmazonS3\r\n\r\n")
    return head.encode() + (b"" if method == "HEAD" else body)


_proxies: dict[str, FaultProxy] = {}


@pytest.fixture
def faulty_s3(s3_endpoint, request):
    """A FaultProxy in front of ``s3_endpoint``, with no rules and an empty log of fired faults."""
    proxy = _proxies.get(s3_endpoint)
    if proxy is None:
        proxy = _proxies[s3_endpoint] = FaultProxy(s3_endpoint)
        request.config.add_cleanup(proxy.close)
    proxy.clear()
    proxy.fired.clear()
    yield proxy
    proxy.clear()
