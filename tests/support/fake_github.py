"""A fake GitHub REST API on 127.0.0.1, checking every request against GitHub's own description.

Each request is matched to an operation of tests/data/github/openapi-subset.json (method, path
template, path and query parameter types, request body schema, API headers); anything that does
not match is recorded in `server.errors` (the fixture fails the test) and answered 400. Every
JSON answer with a documented status is validated against the response schema too, and is built
from the schema (all required fields present), so the fake cannot drift from the real shapes.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.paths import SAMPLES

SPEC_PATH = SAMPLES / "github" / "openapi-subset.json"
EVENTS_PATH = SAMPLES / "github" / "event-payloads.json"
BOT = "github-actions[bot]"
COMMENT_LIMIT = 65_536


# -- a small OpenAPI 3.0 schema validator and sample builder ------------------------------------


def validate(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Problems of `value` against an OpenAPI 3.0 schema (the keywords the subset uses)."""
    if value is None:
        if schema.get("nullable") or not schema:
            return []
        if "oneOf" in schema and any(s.get("nullable") for s in schema["oneOf"]):
            return []
        return [f"{where}: null but not nullable"]
    if "oneOf" in schema or "anyOf" in schema:
        branches = schema.get("oneOf") or schema.get("anyOf") or []
        results = [validate(value, branch, where) for branch in branches]
        if any(not r for r in results):
            return []
        return [f"{where}: matches none of {len(branches)} alternatives: {results[0][:2]}"]
    for sub in schema.get("allOf", []):
        problems = validate(value, sub, where)
        if problems:
            return problems
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if kind in checks and not checks[kind](value):
        return [f"{where}: expected {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not in {schema['enum']}"]
    problems: list[str] = []
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{where}: missing required {name!r}")
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                problems += validate(value[name], sub, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], f"{where}[{i}]")
    return problems


def sample(schema: dict[str, Any]) -> Any:
    """A minimal valid instance: every required property, with a plausible value."""
    if "oneOf" in schema or "anyOf" in schema:
        return sample((schema.get("oneOf") or schema.get("anyOf"))[0])
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: sample(props.get(name, {})) for name in schema.get("required", [])}
    if kind == "array":
        return []
    if kind == "integer":
        example = schema.get("example")
        return example if isinstance(example, int) and not isinstance(example, bool) else 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    if kind == "string":
        if schema.get("format") == "date-time":
            return "2024-01-01T00:00:00Z"
        example = schema.get("example")
        return example if isinstance(example, str) else "x"
    return None


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    literal_segments: int
    spec: dict[str, Any]
    path_params: dict[str, dict[str, Any]]


@functools.cache
def load_operations() -> list[Operation]:
    spec = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    ops = []
    for template, item in spec["paths"].items():
        path_parameters = item.get("parameters", [])
        for method, op in item.items():
            if method == "parameters":
                continue
            params = path_parameters + op.get("parameters", [])
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
            ops.append(
                Operation(
                    method=method.upper(),
                    template=template,
                    regex=re.compile(f"^{pattern}$"),
                    literal_segments=sum(1 for s in template.split("/") if "{" not in s),
                    spec={**op, "parameters": params},
                    path_params={p["name"]: p for p in params if p["in"] == "path"},
                )
            )
    return ops


def _param_ok(raw: str, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "integer":
        return re.fullmatch(r"-?\d+", raw) is not None
    if kind == "boolean":
        return raw in ("true", "false")
    if "enum" in schema:
        return raw in schema["enum"]
    return True


# -- the server -----------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


@dataclass
class Fault:
    """A scripted answer for the next matching request(s); `after` = do the work, then fail."""

    method: str
    path: re.Pattern[str]
    reply: Reply
    times: int = 1
    after: bool = False


@dataclass
class Hook:
    """Runs in the server thread when a matching request arrives, before it is answered: to
    play a concurrent run's part (its comment appears just before ours is posted, etc.)."""

    method: str
    path: re.Pattern[str]
    action: Callable[[], None]
    times: int = 1


@dataclass
class Seen:
    method: str
    path: str  # without the API prefix
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]
    operation: str


class _Server(ThreadingHTTPServer):
    """A client that hung up (its deadline passed during a slow fault) is no error of the
    server's: socketserver would print its traceback to stderr, into whichever test's captured
    output runs then."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)


class FakeGitHub:
    """State + request log; start with `with FakeGitHub() as gh:` and point GITHUB_API_URL at it."""

    def __init__(self, prefix: str = "", repo: str = "octo-org/octo-repo") -> None:
        self.prefix = prefix.rstrip("/")
        self.repo = repo
        self.operations = list(load_operations())
        self.schemas = _schemas(self.operations)
        self.errors: list[str] = []
        self.requests: list[Seen] = []
        self.faults: list[Fault] = []
        self.hooks: list[Hook] = []
        self.tokens: dict[str, tuple[str, bool]] = {"test-token-s3cr3t": (BOT, True)}
        self.comments: dict[int, dict[str, Any]] = {}  # id -> comment
        self.comment_issue: dict[int, int] = {}
        self.pulls: list[dict[str, Any]] = []
        self.artifacts: list[dict[str, Any]] = []
        self.runs: dict[int, dict[str, Any]] = {}
        self.blobs: dict[int, bytes] = {}
        self.storage_requests: list[dict[str, str]] = []
        self.storage_failures: list[int] = []  # statuses for the next storage downloads
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    # lifecycle
    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return self.root + self.prefix

    # seeding
    def new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def add_comment(self, issue: int, body: str, login: str = BOT) -> dict[str, Any]:
        cid = self.new_id()
        comment = sample(self.schemas["comment"])
        user = sample(self.schemas["user"])
        user.update(login=login, type="Bot" if login.endswith("[bot]") else "User")
        comment.update(
            id=cid,
            body=body,
            user=user,
            html_url=f"https://github.com/{self.repo}/pull/{issue}#issuecomment-{cid}",
            issue_url=f"{self.api_url}/repos/{self.repo}/issues/{issue}",
            url=f"{self.api_url}/repos/{self.repo}/issues/comments/{cid}",
        )
        self.comments[cid] = comment
        self.comment_issue[cid] = issue
        return comment

    def comments_on(self, issue: int) -> list[dict[str, Any]]:
        return [c for cid, c in sorted(self.comments.items()) if self.comment_issue[cid] == issue]

    def add_pull(self, number: int, head_sha: str, base_ref: str = "main") -> dict[str, Any]:
        pull = sample(self.schemas["pull"])
        pull["number"] = number
        pull["state"] = "open"
        pull["head"] = {**pull["head"], "sha": head_sha}
        base_repo = {**(pull["base"].get("repo") or {}), "full_name": self.repo}
        pull["base"] = {**pull["base"], "ref": base_ref, "sha": "b" * 40, "repo": base_repo}
        self.pulls.append(pull)
        return pull

    def add_artifact(
        self,
        name: str,
        data: bytes,
        *,
        branch: str = "main",
        head_sha: str = "a" * 40,
        event: str = "push",
        conclusion: str = "success",
        created_at: str = "2024-01-01T00:00:00Z",
        head_repository_id: int = 1,
    ) -> dict[str, Any]:
        run_id = self.new_id()
        art_id = self.new_id()
        run = sample(self.schemas["run"])
        run.update(
            id=run_id, head_branch=branch, head_sha=head_sha, event=event, conclusion=conclusion
        )
        self.runs[run_id] = run
        artifact = sample(self.schemas["artifact"])
        artifact.update(
            id=art_id,
            name=name,
            size_in_bytes=len(data),
            expired=False,
            created_at=created_at,
            archive_download_url=f"{self.api_url}/repos/{self.repo}/actions/artifacts/{art_id}/zip",
            workflow_run={
                "id": run_id,
                "repository_id": 1,
                "head_repository_id": head_repository_id,
                "head_branch": branch,
                "head_sha": head_sha,
            },
        )
        self.artifacts.insert(0, artifact)  # newest first, as GitHub lists them
        self.blobs[art_id] = data
        return artifact

    def fail(
        self, method: str, path: str, status: int, *, times: int = 1, after: bool = False, **kw: Any
    ) -> None:
        """Answer the next `times` matching requests with `status` (`raw=` bytes: not JSON)."""
        body = kw.pop("body", {"message": "Server Error", "documentation_url": "https://docs"})
        reply = Reply(status, body, kw.pop("headers", {}), kw.pop("raw", None))
        self.faults.append(Fault(method, re.compile(path), reply, times, after))

    def on(self, method: str, path: str, action: Callable[[], None], *, times: int = 1) -> None:
        self.hooks.append(Hook(method, re.compile(path), action, times))

    # request handling
    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        found = [
            (op, m.groupdict())
            for op in self.operations
            if op.method == method and (m := op.regex.match(path))
        ]
        if not found:
            return None
        return max(found, key=lambda f: f[0].literal_segments)

    def check_request(
        self,
        op: Operation,
        params: dict[str, str],
        query: dict[str, list[str]],
        body: Any,
        headers: dict[str, str],
    ) -> list[str]:
        where = f"{op.method} {op.template}"
        problems = []
        if headers.get("accept") != "application/vnd.github+json":
            problems.append(f"{where}: Accept is {headers.get('accept')!r}")
        if headers.get("x-github-api-version") != "2022-11-28":
            problems.append(
                f"{where}: X-GitHub-Api-Version is {headers.get('x-github-api-version')!r}"
            )
        for name, value in params.items():
            if not _param_ok(value, op.path_params[name].get("schema", {})):
                problems.append(f"{where}: path parameter {name}={value!r} has the wrong type")
        known = {p["name"]: p for p in op.spec["parameters"] if p["in"] == "query"}
        for name, values in query.items():
            if name not in known:
                problems.append(f"{where}: unknown query parameter {name!r}")
            elif not all(_param_ok(v, known[name].get("schema", {})) for v in values):
                problems.append(f"{where}: query {name}={values!r} has the wrong type")
        if "per_page" in query and int(query["per_page"][0]) > 100:
            problems.append(f"{where}: per_page over 100")
        request_body = op.spec.get("requestBody")
        if request_body is not None:
            schema = request_body["content"]["application/json"]["schema"]
            if body is None and request_body.get("required"):
                problems.append(f"{where}: missing JSON body")
            elif body is not None:
                problems += [f"{where}: body {p}" for p in validate(body, schema)]
        elif body is not None:
            problems.append(f"{where}: a body where none is expected")
        return problems

    def check_response(self, op: Operation, reply: Reply) -> list[str]:
        documented = op.spec["responses"].get(str(reply.status))
        if documented is None or reply.raw is not None:
            return []
        content = documented.get("content", {}).get("application/json")
        if content is None or reply.body is None:
            return []
        return [
            f"response of {op.method} {op.template}: {p}"
            for p in validate(reply.body, content["schema"])
        ]


def _schemas(ops: list[Operation]) -> dict[str, dict[str, Any]]:
    def ok(method: str, template: str, status: str = "200") -> dict[str, Any]:
        op = next(o for o in ops if o.method == method and o.template == template)
        schema: dict[str, Any] = op.spec["responses"][status]["content"]["application/json"][
            "schema"
        ]
        return schema

    comment = ok("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
    artifacts = ok("GET", "/repos/{owner}/{repo}/actions/artifacts")
    return {
        "comment": comment,
        "user": comment["properties"]["user"],
        "pull": ok("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls")["items"],
        "pull_full": ok("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"),
        "artifact": artifacts["properties"]["artifacts"]["items"],
        "run": ok("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    }


def _page(gh: FakeGitHub, path: str, query: dict[str, list[str]], items: list[Any]) -> Reply:
    per_page = int(query.get("per_page", ["30"])[0])
    page = int(query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per_page : page * per_page]
    last = max(1, -(-len(items) // per_page))
    links = []
    base = f"{gh.api_url}{path}"
    keep = {k: v[0] for k, v in query.items() if k not in ("page", "per_page")}
    extra = "".join(f"&{k}={v}" for k, v in keep.items())
    if page < last:
        links.append(f'<{base}?per_page={per_page}&page={page + 1}{extra}>; rel="next"')
        links.append(f'<{base}?per_page={per_page}&page={last}{extra}>; rel="last"')
    return Reply(200, chunk, {"Link": ", ".join(links)} if links else {})


def _route(
    gh: FakeGitHub,
    op: Operation,
    params: dict[str, str],
    query: dict[str, list[str]],
    body: Any,
    token: tuple[str, bool],
    path: str,
) -> Reply:
    login, can_write = token
    key = (op.method, op.template)
    forbidden = Reply(
        403,
        {
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest/issues/comments",
            "status": "403",
        },
    )
    if key == ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"):
        return _page(gh, path, query, gh.comments_on(int(params["issue_number"])))
    if key == ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"):
        if not can_write:
            return forbidden
        if len(body["body"]) > COMMENT_LIMIT:
            return Reply(
                422,
                {
                    "message": "Validation Failed: Body is too long (maximum is 65536 characters)",
                    "documentation_url": "https://docs",
                },
            )
        return Reply(201, gh.add_comment(int(params["issue_number"]), body["body"], login))
    if key == ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"):
        if not can_write:
            return forbidden
        comment = gh.comments.get(int(params["comment_id"]))
        if comment is None:
            return Reply(404, {"message": "Not Found", "documentation_url": "https://docs"})
        if len(body["body"]) > COMMENT_LIMIT:
            return Reply(422, {"message": "Body is too long", "documentation_url": "https://d"})
        comment["body"] = body["body"]
        return Reply(200, comment)
    if key == ("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}"):
        if not can_write:
            return forbidden
        gh.comments.pop(int(params["comment_id"]), None)
        return Reply(204)
    if key == ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"):
        number = int(params["pull_number"])
        pull = next((p for p in gh.pulls if p["number"] == number), None)
        if pull is None:
            return Reply(404, {"message": "Not Found", "documentation_url": "https://docs"})
        full = sample(gh.schemas["pull_full"])
        full.update({k: pull[k] for k in ("number", "state", "head", "base")})
        return Reply(200, full)
    if key == ("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls"):
        sha = params["commit_sha"]
        return Reply(200, [p for p in gh.pulls if p["head"]["sha"] == sha])
    if key == ("GET", "/repos/{owner}/{repo}/actions/artifacts"):
        name = query.get("name", [None])[0]
        items = [a for a in gh.artifacts if name is None or a["name"] == name]
        reply = _page(gh, path, query, items)
        reply.body = {"total_count": len(items), "artifacts": reply.body}
        return reply
    if key == ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"):
        run_id = int(params["run_id"])
        name = query.get("name", [None])[0]
        items = [
            a
            for a in gh.artifacts
            if a["workflow_run"]["id"] == run_id and (name is None or a["name"] == name)
        ]
        return Reply(200, {"total_count": len(items), "artifacts": items})
    if key == ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"):
        run = gh.runs.get(int(params["run_id"]))
        return Reply(200, run) if run else Reply(404, {"message": "Not Found"})
    if key == ("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"):
        art_id = int(params["artifact_id"])
        if art_id not in gh.blobs or params["archive_format"] != "zip":
            return Reply(404, {"message": "Not Found"})
        # Storage lives elsewhere (a pre-signed URL): not under the API prefix.
        return Reply(302, None, {"Location": f"{gh.root}/_storage/{art_id}?sig=abc"})
    return Reply(501, {"message": f"fake GitHub does not implement {key}"})


def _handler(gh: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, reply: Reply) -> None:
            data = (
                reply.raw
                if reply.raw is not None
                else (b"" if reply.body is None else json.dumps(reply.body).encode())
            )
            self.send_response(reply.status)
            if reply.body is not None and reply.raw is None:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            url = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            length = int(headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if url.path.startswith("/_storage/"):
                gh.storage_requests.append(headers)
                art_id = int(url.path.rsplit("/", 1)[1])
                if "authorization" in headers:
                    gh.errors.append("the API token was sent to artifact storage")
                if gh.storage_failures:
                    self._send(Reply(gh.storage_failures.pop(0), raw=b"<Error>storage</Error>"))
                    return
                self._send(Reply(200, raw=gh.blobs[art_id]))
                return
            if not url.path.startswith(gh.prefix + "/"):
                gh.errors.append(f"{self.command} {url.path}: outside the API prefix {gh.prefix!r}")
                self._send(Reply(404, {"message": "Not Found"}))
                return
            path = url.path[len(gh.prefix) :]
            query = parse_qs(url.query)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                gh.errors.append(f"{self.command} {path}: body is not JSON")
                self._send(Reply(400, {"message": "Problems parsing JSON"}))
                return
            matched = gh.match(self.command, path)
            if matched is None:
                gh.errors.append(f"{self.command} {path}: no such operation in the API subset")
                self._send(Reply(404, {"message": "Not Found"}))
                return
            op, params = matched
            gh.requests.append(
                Seen(self.command, path, query, body, headers, op.spec.get("operationId", ""))
            )
            problems = gh.check_request(op, params, query, body, headers)
            if problems:
                gh.errors.extend(problems)
                self._send(Reply(400, {"message": "; ".join(problems)}))
                return
            with gh._lock:
                hooks = [h for h in gh.hooks if h.method == self.command and h.path.search(path)]
                for hook in hooks:
                    hook.times -= 1
                    if hook.times <= 0:
                        gh.hooks.remove(hook)
            for hook in hooks:
                hook.action()
            auth = headers.get("authorization", "")
            token = gh.tokens.get(auth.removeprefix("Bearer ").strip())
            if token is None:
                self._send(Reply(401, {"message": "Bad credentials"}))
                return
            with gh._lock:
                fault = next(
                    (f for f in gh.faults if f.method == self.command and f.path.search(path)),
                    None,
                )
                if fault is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        gh.faults.remove(fault)
            if fault is not None and not fault.after:
                self._send(fault.reply)
                return
            reply = _route(gh, op, params, query, body, token, path)
            gh.errors.extend(gh.check_response(op, reply))
            self._send(fault.reply if fault is not None else reply)

        do_GET = do_POST = do_PATCH = do_DELETE = _handle

    return Handler


def make_zip(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    """A zip archive in memory (symlinks stored as Unix symlink entries)."""
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def event_payload(kind: str) -> dict[str, Any]:
    payloads: dict[str, Any] = json.loads(EVENTS_PATH.read_text(encoding="utf-8"))
    return dict(payloads[kind])


# the repository, PR and token of the Action runs the tests simulate (the PR's number is that of
# the pull_request.opened payload)
TOKEN = "test-token-s3cr3t"
REPO = "Codertocat/Hello-World"
PR = 2


def make_env(
    tmp_path: Path,
    gh: FakeGitHub,
    kind: str = "pull_request.opened",
    payload: dict[str, object] | None = None,
    **extra: str,
) -> dict[str, str]:
    """The environment of an Action run on `kind`'s event (payload from the OpenAPI examples unless
    given), with its files under `tmp_path`; `gh` learns the event's PR at its head."""
    event = tmp_path / "event.json"
    payload = payload or event_payload(kind)
    event.write_text(json.dumps(payload), encoding="utf-8")
    pull = payload.get("pull_request")
    if isinstance(pull, dict):  # GitHub knows the PR, at this head
        gh.add_pull(pull["number"], pull["head"]["sha"])
    for name in ("summary.md", "output.txt"):
        (tmp_path / name).touch()
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir(exist_ok=True)
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": kind.split(".")[0],
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_SHA": "c" * 40,
        "RUNNER_TEMP": str(runner_temp),
        # the payload's base commit is not in this checkout: the work tree's budget holds
        # (tests/github/test_budget_source.py holds a PR to its base commit's budget)
        "INPUT_BUDGET_FROM": "head",
    }
    env.update(extra)
    return env


def parse_outputs(text: str) -> dict[str, str]:
    """The name=value and name<<DELIMITER blocks of a GITHUB_OUTPUT file."""
    values: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            collected = []
            for inner in lines:
                if inner == delimiter:
                    break
                collected.append(inner)
            values[name] = "\n".join(collected)
    return values
