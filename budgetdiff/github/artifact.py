"""Results artifacts through the REST API: find, download capped, and extract as hostile data."""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from budgetdiff.errors import InputError
from budgetdiff.github.api import GitHubClient

MAX_ARCHIVE_BYTES = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_FILES = 32
MAX_NAME_BYTES = 255  # one path component, as most file systems allow
MAX_PATH_CHARS = 1024
# Results files only: a budget, a script or a workflow has no business in a results artifact.
DATA_SUFFIXES = frozenset(
    {".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet", ".txt", ".prom", ".md"}
)
# Runs on the base branch itself; a pull_request run from a fork's `main` is not the base.
BASE_EVENTS = frozenset({"push", "schedule", "workflow_dispatch", "merge_group"})
MAX_RUNS_CHECKED = 20


@dataclass(frozen=True)
class Limits:
    archive_bytes: int = MAX_ARCHIVE_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    file_bytes: int = MAX_FILE_BYTES
    files: int = MAX_FILES


@dataclass(frozen=True)
class FoundArtifact:
    artifact_id: int
    run_id: int
    head_sha: str
    size: int


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _artifacts(page: Any) -> list[dict[str, Any]]:
    items = _dict(page).get("artifacts")
    return [a for a in items if isinstance(a, dict)] if isinstance(items, list) else []


def find_base_artifact(
    client: GitHubClient,
    repo: str,
    name: str,
    branch: str,
    *,
    prefer_sha: str = "",
    repository_id: int | None = None,
) -> FoundArtifact | None:
    """The artifact NAME of the latest successful run on `branch` (its own pushes, not PRs).

    When a run for `prefer_sha` (the PR's base commit) has one, that is taken over a newer one.
    """
    candidates: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for page in client.paginate(f"/repos/{repo}/actions/artifacts", {"name": name}):
        for artifact in _artifacts(page):
            run = _dict(artifact.get("workflow_run"))
            if artifact.get("name") != name or artifact.get("expired"):
                continue
            if _int(artifact.get("id")) is None or _int(run.get("id")) is None:
                continue
            if run.get("head_branch") != branch:
                continue
            if repository_id is not None and run.get("head_repository_id") not in (
                None,
                repository_id,
            ):
                continue  # a fork's branch of the same name
            candidates.append((artifact, run))
        if len(candidates) >= MAX_RUNS_CHECKED:
            break
    # Newest first, the exact base commit before anything else.
    candidates.sort(key=lambda ar: str(ar[0].get("created_at") or ""), reverse=True)
    candidates.sort(key=lambda ar: ar[1].get("head_sha") != prefer_sha)
    for artifact, run in candidates[:MAX_RUNS_CHECKED]:
        run_id = _int(run.get("id")) or 0
        details = client.get_object(f"/repos/{repo}/actions/runs/{run_id}")
        if details.get("conclusion") != "success" or details.get("event") not in BASE_EVENTS:
            continue
        return FoundArtifact(
            artifact_id=_int(artifact.get("id")) or 0,
            run_id=run_id,
            head_sha=str(details.get("head_sha") or run.get("head_sha") or ""),
            size=_int(artifact.get("size_in_bytes")) or 0,
        )
    return None


def find_run_artifact(
    client: GitHubClient, repo: str, run_id: int, name: str
) -> FoundArtifact | None:
    """The artifact NAME uploaded by workflow run `run_id` (the fork PR's benchmark run)."""
    for page in client.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", {"name": name}):
        for artifact in _artifacts(page):
            artifact_id = _int(artifact.get("id"))
            if artifact.get("name") == name and not artifact.get("expired") and artifact_id:
                run = _dict(artifact.get("workflow_run"))
                return FoundArtifact(
                    artifact_id=artifact_id,
                    run_id=run_id,
                    head_sha=str(run.get("head_sha") or ""),
                    size=_int(artifact.get("size_in_bytes")) or 0,
                )
    return None


def download(
    client: GitHubClient, repo: str, found: FoundArtifact, dest: Path, limits: Limits = Limits()
) -> Path:
    """Download the artifact's zip and extract it into `dest` (created), returning `dest`."""
    what = f"artifact {found.artifact_id} of run {found.run_id}"
    if found.size > limits.archive_bytes:
        raise InputError(
            f"{what}: {found.size} bytes is over the {limits.archive_bytes}-byte cap; "
            "upload only the results files"
        )
    data = client.download(
        f"/repos/{repo}/actions/artifacts/{found.artifact_id}/zip", limits.archive_bytes
    )
    return extract(data, dest, what, limits)


def _safe_name(name: str, what: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or path.is_absolute()
        or any(part in ("..", "") for part in path.parts)
        or ":" in path.parts[0]
    ):
        raise InputError(f"{what}: entry {name!r} is not a plain relative path; refusing it")
    if len(name) > MAX_PATH_CHARS or any(
        len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in path.parts
    ):
        raise InputError(
            f"{what}: entry {name[:80]!r}... has a name too long for a file system "
            f"(over {MAX_NAME_BYTES} bytes a part); upload the results under short names"
        )
    return path


def extract(data: bytes, dest: Path, what: str, limits: Limits = Limits()) -> Path:
    """Extract a zip treated as hostile: plain relative paths, regular data files, size caps.

    Sizes are counted on the bytes actually inflated, not on what the archive claims.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except UnicodeDecodeError:  # the UTF-8 flag on a name that is not UTF-8
        raise InputError(f"{what}: an entry's name is not the UTF-8 it claims to be") from None
    except zipfile.BadZipFile:
        raise InputError(f"{what}: not a zip archive") from None
    with archive:
        entries = [info for info in archive.infolist() if not info.is_dir()]
        if len(entries) > limits.files:
            raise InputError(
                f"{what}: {len(entries)} files, more than the cap of {limits.files}; "
                "upload only the results files"
            )
        plan: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        for info in entries:
            path = _safe_name(info.filename, what)
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind and kind != stat.S_IFREG:  # symlinks, devices; no type bits = plain file
                raise InputError(f"{what}: entry {info.filename!r} is not a regular file")
            if path.suffix.lower() not in DATA_SUFFIXES:
                raise InputError(
                    f"{what}: entry {info.filename!r} is not a results file "
                    f"(allowed: {', '.join(sorted(DATA_SUFFIXES))})"
                )
            if info.flag_bits & 0x1:
                raise InputError(f"{what}: entry {info.filename!r} is encrypted")
            plan.append((info, path))
        _no_clashes([path for _, path in plan], what)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            _write(archive, plan, dest.resolve(), what, limits)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise InputError(f"{what}: damaged or unsupported zip ({exc})") from None
    return dest


def _no_clashes(paths: list[PurePosixPath], what: str) -> None:
    """No two entries at one path, and no entry both a file and a folder (`x.csv` and
    `x.csv/y.csv`), whatever their order: one would overwrite the other or fail half-way."""
    seen: set[PurePosixPath] = set()
    folders = {parent for path in paths for parent in path.parents}
    for path in paths:
        if path in seen:
            raise InputError(f"{what}: entry {str(path)!r} appears twice; refusing the artifact")
        if path in folders:
            raise InputError(
                f"{what}: entry {str(path)!r} is both a file and a folder of other entries; "
                "refusing the artifact"
            )
        seen.add(path)


def _write(
    archive: zipfile.ZipFile,
    plan: list[tuple[zipfile.ZipInfo, PurePosixPath]],
    root: Path,
    what: str,
    limits: Limits,
) -> None:
    total = 0
    for info, path in plan:
        target = root.joinpath(*path.parts)
        if root not in target.resolve().parents:
            raise InputError(f"{what}: entry {info.filename!r} escapes the folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        size = 0
        with archive.open(info) as src, target.open("wb") as out:
            while chunk := src.read(1 << 16):
                size += len(chunk)
                total += len(chunk)
                if size > limits.file_bytes or total > limits.total_bytes:
                    raise InputError(
                        f"{what}: entry {info.filename!r} inflates past the "
                        f"{min(limits.file_bytes, limits.total_bytes)}-byte cap; refusing it"
                    )
                out.write(chunk)
