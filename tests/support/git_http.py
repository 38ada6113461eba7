"""A real bare git repository served over smart HTTP on 127.0.0.1: `git http-backend` run as a
CGI program for every request, behind a threading `http.server`, with faults to inject.

A fault answers the n-th matching request (counted from 1 per fault) with a status and no
body, as a proxy or a rate limiter would (502, 403, 429), or stalls it: sends nothing for a
while, then answers normally. Faults match on the method and a part of the path
(`info/refs`, `git-upload-pack`, `git-receive-pack`), so a test can break a fetch, a push,
or only their first round trip. Every request is logged (method, path, status).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HTTP_BACKEND = "http-backend"
# No fault stalls longer than this, whatever a test asks: the server's threads always end.
MAX_STALL_S = 30.0
MAX_BODY_BYTES = 64 * 1024**2


@dataclass
class Fault:
    """Answer matching requests number `nth` (a set, counted from 1) with `status`, or hold
    them `stall_s` seconds first (status 0: then answer normally)."""

    match: str  # a part of the path, e.g. "git-receive-pack"
    nth: frozenset[int]
    status: int = 502
    method: str | None = None  # "GET", "POST", or either
    stall_s: float = 0.0
    seen: int = 0

    def hits(self, method: str, path: str) -> bool:
        if self.match not in path or (self.method is not None and method != self.method):
            return False
        self.seen += 1
        return self.seen in self.nth


@dataclass
class GitHttpServer:
    """The served repository's folder and URL, its faults and its request log."""

    root: Path
    name: str = "origin.git"
    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, int]] = field(default_factory=list)
    port: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def repo(self) -> Path:
        return self.root / self.name

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.name}"

    def fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            return next((f for f in self.faults if f.hits(method, path)), None)

    def record(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.log.append((method, path, status))

    def statuses(self, status: int) -> int:
        with self.lock:
            return sum(1 for _, _, s in self.log if s == status)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body: by Content-Length, or chunked (git sends a large push chunked)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        total = 0
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(parts)
            total += size
            if total > MAX_BODY_BYTES:
                raise ValueError("request body too large")
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    if length > MAX_BODY_BYTES:
        raise ValueError("request body too large")
    return handler.rfile.read(length)


def _handler(server: GitHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test reads server.log

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            path, _, query = self.path.partition("?")
            fault = server.fault(self.command, path)
            if fault is not None and fault.stall_s:
                server.stopping.wait(min(fault.stall_s, MAX_STALL_S))
            if fault is not None and fault.status:
                server.record(self.command, path, fault.status)
                self.send_response(fault.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = _read_body(self) if self.command == "POST" else b""
            status = self._cgi(path, query, body)
            server.record(self.command, path, status)

        def _cgi(self, path: str, query: str, body: bytes) -> int:
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": "127.0.0.1",
                "REMOTE_USER": "tester",
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            }
            done = subprocess.run(
                ["git", HTTP_BACKEND],
                input=body,
                capture_output=True,
                env=env,
                timeout=60,
                check=False,
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = done.stdout.partition(b"\n\n")
            status, headers = 200, []
            for raw in head.decode("latin-1").splitlines():
                key, _, value = raw.partition(":")
                if key.lower() == "status":
                    status = int(value.split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return status

    return Handler


def serve(root: Path) -> Iterator[GitHttpServer]:
    """A served bare repository `root/origin.git` (receive-pack on), for a `yield` fixture."""
    server = GitHttpServer(root)
    subprocess.run(["git", "init", "--quiet", "--bare", str(server.repo)], check=True)
    subprocess.run(
        ["git", "--git-dir", str(server.repo), "config", "http.receivepack", "true"], check=True
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
