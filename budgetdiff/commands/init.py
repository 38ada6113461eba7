"""`budgetdiff init [DIR]`: the files a repository starts from. A commented budget.yml, the
minimal workflow as .github/workflows/latency.yml, and an example base/head pair that `compare`
runs on, so the first command after `init` shows a report. Never overwrites a file without
--force: when one is there, it names it, exits 2 and writes nothing."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import InitOptions
from budgetdiff.errors import UsageError
from budgetdiff.render.text import plain

EXAMPLE_DIR = "budgetdiff-example"


# where each file goes (relative to DIR): the packaged file it is a copy of (folder, name)
PLANNED = {
    "budget.yml": ("templates", "budget.yml"),
    ".github/workflows/latency.yml": ("templates", "latency.yml"),
    f"{EXAMPLE_DIR}/base.csv": ("demo", "base.csv"),  # the demo's pair: compare runs on it
    f"{EXAMPLE_DIR}/head.csv": ("demo", "head.csv"),
}


def run(o: InitOptions, edge: Edge) -> int:
    root = Path(o.dir)
    if root.exists() and not root.is_dir():
        raise UsageError(f"init: {plain(o.dir, None)} is a file; give a folder (default: .)")
    fitted = None
    if o.head is not None:  # issue 38: a budget that fits the user's own file, no example pair
        from budgetdiff.commands.init_fit import fitted_budget  # reads and evaluates a table

        fitted = fitted_budget(o.head, edge.environ).encode("utf-8")
    planned = {k: v for k, v in PLANNED.items() if fitted is None or EXAMPLE_DIR not in k}
    plan = {root / name: source for name, source in planned.items()}
    there = [path for path in plan if path.exists() or path.is_symlink()]
    if there and not o.force:
        names = ", ".join(plain(str(p), None) for p in there)
        raise UsageError(
            f"init: {names} already exist{'s' if len(there) == 1 else ''}; nothing was written "
            "(--force overwrites them)"
        )
    for path in there:
        if path.is_dir() and not path.is_symlink():
            raise UsageError(
                f"init: {plain(str(path), None)} is a folder; move it away and run init"
            )
    for path, (folder, name) in plan.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()  # --force replaces the link itself, never the file it points at
        own = fitted if fitted is not None and name == "budget.yml" else None
        path.write_bytes(own or (files("budgetdiff") / folder / name).read_bytes())
        edge.out.write(f"wrote {plain(str(path), None)}\n")
    edge.out.write(_next_steps(root) if o.head is None else _fitted_steps(root, o.head))
    return 0


def _fitted_steps(root: Path, head: str) -> str:
    at = "" if root == Path(".") else f"cd {plain(str(root), None)}\n  "
    return (
        "\nNext:\n"
        f"  {at}budgetdiff check --head {plain(head, None)} --budget budget.yml\n"
        "    (budget.yml fits that file: the check passes; tighten the targets to your SLO)\n"
        "  Put your benchmark in place of ./bench/run.sh in .github/workflows/latency.yml.\n"
    )


def _next_steps(root: Path) -> str:
    at = "" if root == Path(".") else f"cd {plain(str(root), None)}\n  "
    return (
        "\nNext:\n"
        f"  {at}budgetdiff compare --base {EXAMPLE_DIR}/base.csv --head {EXAMPLE_DIR}/head.csv "
        "--budget budget.yml\n"
        "    (the example pair: decode regressed, so the verdict is fail and the exit code 1)\n"
        "  Put your SLO and slice budgets in budget.yml, and your benchmark in place of\n"
        "  ./bench/run.sh in .github/workflows/latency.yml; it writes one row per request\n"
        f"  (columns like those of {EXAMPLE_DIR}/head.csv) or a benchmark tool's own file.\n"
        f"  Then delete {EXAMPLE_DIR}/.\n"
    )
