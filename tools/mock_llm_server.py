"""A local OpenAI-compatible streaming server with known delays, to run the benchmark tools against.

The test data of budgetdiff is the tools' own output. To get a file a tool writes in a case no
one has published (every request failed, a cancelled run, a warm-up, a sweep), run that tool's
real version against this server::

    python tools/mock_llm_server.py --port 8011 --decode-ms 10 --timings timings.jsonl &
    aiperf profile --url http://127.0.0.1:8011 ...

It serves ``/v1/chat/completions`` and ``/v1/completions`` (streamed as server-sent events, one
token per chunk, or whole), ``/v1/models`` and ``/health``. Each request waits ``--queue-ms``
(one request at a time per ``--slots``), ``--prefill-ms``, then ``--decode-ms`` per output token.
``--fail-rate`` answers that share of requests (seeded) with ``--fail-status``; ``--timings``
writes the server's own view of each request (epoch ns and ms), the truth to check a tool by.

Standard library only: it is a test fixture for other programs, not part of budgetdiff.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "at",
    "this",
    "from",
]


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], args: argparse.Namespace) -> None:
        super().__init__(address, Handler)
        self.args = args
        self.slots = threading.Semaphore(args.slots)
        self.random = random.Random(args.seed)
        self.lock = threading.Lock()
        self.timings = open(args.timings, "a", encoding="utf-8") if args.timings else None  # noqa: SIM115

    def fails(self) -> bool:
        with self.lock:
            return self.random.random() < float(self.args.fail_rate)

    def log(self, record: dict[str, Any]) -> None:
        if self.timings is not None:
            with self.lock:
                self.timings.write(json.dumps(record) + "\n")
                self.timings.flush()


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"
    # each token is its own small write: without TCP_NODELAY, Nagle's algorithm holds the first
    # chunk until the client acknowledges the headers (a delayed ACK, about 40 ms)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.startswith("/v1/models"):
            model = {"id": self.server.args.model, "object": "model", "owned_by": "mock"}
            self.send_json(200, {"object": "list", "data": [model]})
        elif self.path.startswith("/health"):
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        chat = self.path.startswith("/v1/chat/completions")
        if not chat and not self.path.startswith("/v1/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            self.complete(body, chat)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a cancellation)
            self.server.log({"request_id": self.headers.get("X-Request-ID"), "status": 499})
            self.close_connection = True

    def complete(self, body: dict[str, Any], chat: bool) -> None:
        args = self.server.args
        arrive = time.time_ns()
        request_id = self.headers.get("X-Request-ID") or uuid.uuid4().hex
        if self.server.fails():
            time.sleep(args.prefill_ms / 1000)
            message = {
                "message": "mock failure",
                "type": "InternalServerError",
                "code": args.fail_status,
            }
            self.send_json(args.fail_status, {"error": message})
            self.server.log(
                {"request_id": request_id, "arrive_ns": arrive, "status": args.fail_status}
            )
            return
        tokens = int(
            body.get("max_completion_tokens") or body.get("max_tokens") or args.output_tokens
        )
        prompt = json.dumps(body.get("messages") or body.get("prompt") or "")
        prompt_tokens = max(1, len(prompt.split()))
        with self.server.slots:
            scheduled = time.time_ns()
            time.sleep(args.queue_ms / 1000 + args.prefill_ms / 1000)
            stream = Stream(self, chat, request_id, args.model) if body.get("stream") else None
            first = time.time_ns()
            text = []
            for i in range(tokens):
                if i:
                    time.sleep(args.decode_ms / 1000)
                word = WORDS[i % len(WORDS)] + " "
                text.append(word)
                if stream is not None:
                    stream.token(word)
            last = time.time_ns()
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": tokens,
            "total_tokens": prompt_tokens + tokens,
        }
        if stream is not None:
            include_usage = (body.get("stream_options") or {}).get("include_usage")
            stream.end(usage if include_usage else None)
        else:
            self.send_json(200, whole(chat, request_id, args.model, "".join(text), usage))
        self.server.log(
            {
                "request_id": request_id,
                "arrive_ns": arrive,
                "scheduled_ns": scheduled,
                "first_token_ns": first,
                "last_token_ns": last,
                "queue_ms": (scheduled - arrive) / 1e6,
                "ttft_ms": (first - arrive) / 1e6,
                "decode_ms": (last - first) / 1e6,
                "output_tokens": tokens,
                "status": 200,
            }
        )

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Stream:
    """Server-sent events, one token per chunk, in chunked transfer encoding."""

    def __init__(self, handler: Handler, chat: bool, request_id: str, model: str) -> None:
        self.handler, self.chat, self.model = handler, chat, model
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-{request_id}"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    def send(self, text: str) -> None:
        data = text.encode()
        self.handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.handler.wfile.flush()

    def event(self, choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> None:
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        chunk = {
            "id": self.id,
            "object": kind,
            "created": int(time.time()),
            "model": self.model,
            "choices": choices,
        }
        if usage is not None:
            chunk["usage"] = usage
        self.send(f"data: {json.dumps(chunk)}\n\n")

    def token(self, word: str) -> None:
        part: dict[str, Any] = (
            {"delta": {"role": "assistant", "content": word}} if self.chat else {"text": word}
        )
        self.event([{"index": 0, **part, "finish_reason": None}])

    def end(self, usage: dict[str, int] | None) -> None:
        last: dict[str, Any] = {"delta": {}} if self.chat else {"text": ""}
        self.event([{"index": 0, **last, "finish_reason": "length"}])
        if usage is not None:
            self.event([], usage)
        self.send("data: [DONE]\n\n")
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


def whole(
    chat: bool, request_id: str, model: str, text: str, usage: dict[str, int]
) -> dict[str, Any]:
    if chat:
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "length",
        }
        kind, prefix = "chat.completion", "chatcmpl"
    else:
        choice = {"index": 0, "text": text, "finish_reason": "length"}
        kind, prefix = "text_completion", "cmpl"
    return {
        "id": f"{prefix}-{request_id}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--model", default="mock-model")
    parser.add_argument("--queue-ms", type=float, default=20.0)
    parser.add_argument("--prefill-ms", type=float, default=80.0)
    parser.add_argument("--decode-ms", type=float, default=10.0)
    parser.add_argument(
        "--output-tokens", type=int, default=64, help="when the request sets no max_tokens"
    )
    parser.add_argument(
        "--slots", type=int, default=64, help="requests served at once; the rest queue"
    )
    parser.add_argument(
        "--fail-rate", type=float, default=0.0, help="share of requests answered with --fail-status"
    )
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--timings", help="append the server's view of each request here (JSON Lines)"
    )
    args = parser.parse_args()
    server = Server((args.host, args.port), args)
    print(f"serving {args.model} on http://{args.host}:{args.port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
