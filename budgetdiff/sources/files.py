"""The file edge: bytes of a results file from the work tree or from a git commit, size-capped."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from budgetdiff import numbers
from budgetdiff.errors import GitError, InputError

DEFAULT_MAX_BYTES = 2 * 1024**3  # a results file from a PR is attacker-controlled: cap it
MAX_BYTES_ENV = "BUDGETDIFF_MAX_INPUT_BYTES"


def max_bytes(environ: Mapping[str, str]) -> int:
    raw = environ.get(MAX_BYTES_ENV)
    if raw is None:
        return DEFAULT_MAX_BYTES
    try:
        return int(raw)
    except ValueError:
        raise InputError(f"{MAX_BYTES_ENV}={raw!r}: must be a whole number of bytes") from None


def read_bytes(path: str, ref: str | None, limit: int) -> bytes:
    """The file's bytes, from the work tree or as it is in commit `ref` (`git show REF:./PATH`)."""
    if ref is not None:
        return _git_show(ref, path, limit)
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limit:
            raise InputError(
                f"{path}: {numbers.count(size)} bytes is over the {numbers.count(limit)}-byte "
                f"limit for a results file (raise it with {MAX_BYTES_ENV} if the file is yours)"
            )
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file; check the path (relative to {Path.cwd()})"
        ) from None
    except IsADirectoryError:
        raise InputError(
            f"{path}: is a directory, not a results file; pass the file inside it"
        ) from None
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror})") from None
    if _blank(data):
        raise InputError(f"{path}: the file is empty; did the benchmark finish and write it?")
    return data


def head_of(path: str, ref: str | None, limit: int, size: int) -> tuple[bytes, int] | None:
    """The first `size` bytes of a file of the work tree within the limit, and its size (one
    `stat`: no second look that could find it gone), for a reader that reads the file itself
    (a Parquet table: pyarrow reads its column chunks, no copy of the whole file in memory
    first, 0.4 GB a side at ten million requests); None for a commit's file, one that
    `read_bytes` must say what is wrong with, or one that is not a regular file (a pipe,
    `<(...)`: what is read of it here would be gone for `read_bytes`)."""
    if ref is not None:
        return None
    try:
        info = Path(path).stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with open(path, "rb") as f:
            return f.read(size), info.st_size
    except OSError:
        return None


def _blank(data: bytes) -> bool:
    """Nothing but whitespace, found without `data.strip()`'s copy of the file (60 ms for two
    49 MB files)."""
    return not data or data.isspace()


def exists(path: str, ref: str | None) -> bool:
    if ref is None:
        return Path(path).exists()  # a directory is there: reading it says what is wrong
    _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], ref, path)
    try:
        _git(["cat-file", "-e", f"{ref}:./{path}"], ref, path)
    except GitError:
        return False
    return True


def _git_show(ref: str, path: str, limit: int) -> bytes:
    data = _git(["show", f"{ref}:./{path}"], ref, path)
    if len(data) > limit:
        raise InputError(
            f"{ref}:{path}: over the {numbers.count(limit)}-byte limit for a results file"
        )
    if _blank(data):
        raise InputError(f"{ref}:{path}: the file is empty in that commit")
    return data


def _git(args: list[str], ref: str, path: str) -> bytes:
    import subprocess  # only with a ref: 3 ms of every start otherwise

    if ref.startswith("-") or not ref.strip():
        raise GitError(f"--*-ref {ref!r}: not a git revision; pass a branch, tag or commit SHA")
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, check=False, env={**os.environ, "LC_ALL": "C"}
        )
    except FileNotFoundError:
        raise GitError(f"{ref}:{path}: git is not installed; drop --base-ref/--head-ref") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(
            f"{ref}:{path}: git cannot read it ({why[-1] if why else 'unknown error'}); check the "
            "ref exists (fetch-depth: 0 in actions/checkout) and the path is relative to here"
        )
    return done.stdout
