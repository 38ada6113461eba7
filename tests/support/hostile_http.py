"""A hostile HTTP server on 127.0.0.1 in a thread of the test process (issue 35): each request
is answered by a function of the request, with a status, headers and a body that it may
dribble one byte every `gap_s` seconds. Every request it saw is kept (method, path, query,
headers) so a test can check what budgetdiff sent. Loopback only; every loop it runs is bounded
by the body's length and stops when the server does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    at: float  # when it arrived (time.monotonic)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    gap_s: float = 0.0  # > 0: the body one byte at a time, this long apart


def json_answer(value: Any, status: int = 200, **headers: str) -> Answer:
    return Answer(
        status, json.dumps(value).encode(), {"Content-Type": "application/json", **headers}
    )


class HostileServer:
    """`with HostileServer(answer) as server:` serves `server.url` until the block ends."""

    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        """host:port, as budgetdiff's messages name it."""
        return f"127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # a dribbling answer stops at its next byte
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


def _handler(server: HostileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(min(length, 1 << 20))
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen = Seen(self.command, parts.path, query, headers, time.monotonic())
            server.seen.append(seen)
            answer = server.answer(seen)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                if answer.gap_s <= 0:
                    self.wfile.write(answer.body)
                    return
                self.wfile.flush()
                for i in range(len(answer.body)):
                    if server.stop.wait(answer.gap_s):
                        return
                    self.wfile.write(answer.body[i : i + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # budgetdiff hung up: what a deadline does

    return Handler
