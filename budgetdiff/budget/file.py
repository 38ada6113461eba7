"""The budget file as a file: read its YAML safely with the line of every key, load it into the
model (`parse_budget`, `load_budget`; its problems worded by `problems`), set the slice budgets
in it without touching anything else, and write a file atomically. The edge of the budget
stage (`model` holds the model and its checks).

`write_budget` is what `budgetdiff rebudget --write` does with a proposal's allocation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from budgetdiff.budget.model import Budget, Loc
from budgetdiff.errors import BudgetError
from budgetdiff.numbers import count

ADDED_COMMENT = "# added by budgetdiff rebudget"
# An anchor (`&name`) or tag (`!!int`) before a scalar, each followed by blanks.
_PROPERTIES = re.compile(r"(?:[&!][^\s]*\s+)+")


# A budget is a few keys two or three levels deep; anything far past that is not a budget, and
# PyYAML's composer recurses once per level (10,000 levels would be a RecursionError).
MAX_BUDGET_DEPTH = 20
MAX_BUDGET_BYTES = 1 << 20
# Digits of the longest integer literal read: Python refuses to parse more than 4,300, and no
# budget value needs more than a few.
MAX_INT_DIGITS = 30
# Aliases may repeat values (`<<: *defaults` in 10,000 slices repeats 40,000), not multiply
# them: nine anchors of nine aliases each ("billion laughs", 480 bytes) stand for 9**9 values,
# which validating the budget or quoting it in an error would build (13 GB). The values that
# aliases add, counted as if each were written out, are bounded before anything reads them.
MAX_ALIASED_VALUES = 100_000


def read_yaml(text: str, source: str) -> tuple[object, dict[tuple[str, ...], int]]:
    """The document and the line of each of its keys (`key_lines`), loaded safely: no Python
    objects, a bounded size and depth, no key given twice (YAML would keep the last silently),
    no booleans (`ttft: true` would be 1 ms) and no integer too long to convert."""
    import yaml

    if len(text) > MAX_BUDGET_BYTES:
        raise BudgetError(
            f"{source}: {count(len(text))} characters is not a budget file; keep it "
            f"under {count(MAX_BUDGET_BYTES)}"
        )
    # libyaml when PyYAML has it: ten times faster on a budget of 10,000 slices
    safe: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_depth(text, source, safe)
        loader = _strict_loader(safe, source)(text)
        try:
            root = loader.get_single_node()
            if root is not None:
                _check_aliases(root, source)
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise BudgetError(f"{source}{where}: not valid YAML ({problem})") from None
    return data, key_lines(root)


def key_lines(
    node: Any, at: tuple[str, ...] = (), seen: set[int] | None = None
) -> dict[tuple[str, ...], int]:
    """The 1-based line of every key and list item below `node`, by its path (`slices`,
    `decode`): one walk, so that 10,000 problems each find their line at once. A node an alias
    repeats is walked once (aliases of aliases would otherwise multiply the walk)."""
    import yaml

    lines: dict[tuple[str, ...], int] = {}
    seen = set() if seen is None else seen
    if id(node) in seen:
        return lines
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        children = [(str(k.value), k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    elif isinstance(node, yaml.SequenceNode):
        children = [(str(i), v, v) for i, v in enumerate(node.value)]
    else:
        return lines
    for name, where, value in children:
        path = (*at, name)
        lines.setdefault(path, where.start_mark.line + 1)
        lines.update(key_lines(value, path, seen))
    return lines


def _check_depth(text: str, source: str, loader: Any) -> None:
    """Refuse a document nested deeper than MAX_BUDGET_DEPTH, from its tokens, before the
    composer recurses into it."""
    import yaml

    opening = (
        yaml.BlockMappingStartToken
        | yaml.BlockSequenceStartToken
        | yaml.FlowMappingStartToken
        | yaml.FlowSequenceStartToken
    )
    closing = yaml.BlockEndToken | yaml.FlowMappingEndToken | yaml.FlowSequenceEndToken
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        if isinstance(token, opening):
            depth += 1
            if depth > MAX_BUDGET_DEPTH:
                raise BudgetError(
                    f"{source}:{token.start_mark.line + 1}: nested more than "
                    f"{MAX_BUDGET_DEPTH} levels deep; a budget is a few keys, see "
                    "`budgetdiff schema`"
                )
        elif isinstance(token, closing):
            depth -= 1


def _check_aliases(root: Any, source: str) -> None:
    """Refuse a node graph whose aliases add more than MAX_ALIASED_VALUES values, or that holds
    itself (`&a [*a]`), before it is constructed: each node's size written out, from its
    children's, every node once (an explicit stack: aliases may nest deeper than the text)."""
    import yaml

    size: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: met again, it holds itself
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        kids = _children(node, yaml)
        if children_done:
            open_nodes.discard(id(node))
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            if size[id(node)] - len(size) > MAX_ALIASED_VALUES:
                raise BudgetError(
                    f"{source}:{node.start_mark.line + 1}: the aliases (`*name`) here repeat "
                    f"more than {count(MAX_ALIASED_VALUES)} values; a budget repeats a few, "
                    "write them out"
                )
            continue
        if id(node) in size:
            continue
        if id(node) in open_nodes:
            raise BudgetError(
                f"{source}:{node.start_mark.line + 1}: an alias (`*name`) inside the value it "
                "names; write the value out"
            )
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _strict_loader(safe: Any, source: str) -> Any:
    """A loader class on `safe` that refuses a key given twice, a boolean and an integer too
    long to convert, each with the line it is on."""
    import yaml

    def fail(node: Any, what: str) -> BudgetError:
        return BudgetError(f"{source}:{node.start_mark.line + 1}: {what}")

    class Loader(safe):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[str] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        raise fail(key, f"key {key.value!r} is given twice; keep one")
                    seen.add(key.value)
            return super().construct_mapping(node, deep)

        def construct_yaml_bool(self, node: Any) -> Any:
            raise fail(
                node,
                f"`{node.value}` reads as a boolean (true/false), which no budget key takes; "
                "write a number, or quote it as text",
            )

        def construct_yaml_int(self, node: Any) -> Any:
            if sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
                raise fail(
                    node, f"an integer of {count(len(node.value))} digits; write a plain number"
                )
            return super().construct_yaml_int(node)

    Loader.add_constructor("tag:yaml.org,2002:bool", Loader.construct_yaml_bool)
    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def write_budget(path: Path, allocation: Mapping[str, int]) -> None:
    """Set the slice budgets in `path` to `allocation`, changing nothing else in the file.

    ruamel.yaml parses the file to find where each slice's budget number is (short form
    `decode: 4200`, long form `decode: {budget: 4200, ...}` or block style); only those number
    tokens are replaced in the original text, so comments, key order, quoting, blank lines and
    line endings survive byte for byte. A slice the file does not have is appended at the end
    of `slices:` with the comment `# added by budgetdiff rebudget`. The result is validated as
    a budget and written atomically (a temporary file in the same folder, then os.replace).
    """
    target = Path(os.path.realpath(path))
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raise BudgetError(f"{path}: no such budget file to update") from None
    except OSError as e:
        raise BudgetError(f"{path}: cannot read the budget file ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BudgetError(f"{path}: not UTF-8 text; save the budget file as UTF-8") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    new_text = bom + update_budget_text(text[len(bom) :], allocation, str(path))
    parse_budget(new_text[len(bom) :], str(path))  # never write a budget that does not load
    try:
        write_atomically(target, new_text.encode("utf-8"))
    except OSError as e:
        raise BudgetError(f"{path}: cannot write the budget file ({e.strerror})") from None


def update_budget_text(text: str, allocation: Mapping[str, int], source: str) -> str:
    """`text` with the slice budgets of `allocation` replaced or added (see `write_budget`)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    try:
        root = YAML(typ="rt").compose(text)
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise BudgetError(f"{source}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(root, MappingNode):
        raise BudgetError(f"{source}: the budget must be a mapping of keys")
    slices = _value_of(root, "slices")
    if slices is None or (isinstance(slices, ScalarNode) and slices.value in ("", "~", "null")):
        if allocation:
            raise BudgetError(
                f"{source}: has no `slices:` to update; add `slices:` with one line per slice"
            )
        return text
    if not isinstance(slices, MappingNode):
        raise BudgetError(f"{source}:{_line(slices)}: slices: must be a mapping of slice names")

    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in the text
    present: set[str] = set()
    for key, value in slices.value:
        name = str(key.value)
        if name not in allocation:
            continue
        present.add(name)
        number = value
        if isinstance(value, MappingNode):
            number = _value_of(value, "budget")
            if number is None:
                raise BudgetError(f"{source}:{_line(value)}: slices.{name}: has no `budget:`")
        if number.start_mark.index < key.end_mark.index:
            raise BudgetError(
                f"{source}:{_line(key)}: slices.{name}: the budget is a YAML alias; write it "
                "as a number so that rebudget can update it"
            )
        if not isinstance(number, ScalarNode) or not number.value.strip():
            raise BudgetError(
                f"{source}:{_line(value)}: slices.{name}: write its budget as a number"
            )
        edits.append(_number_edit(text, number, allocation[name]))

    new = [n for n in allocation if n not in present]
    if new:
        edits.append(_append_edit(text, slices, [(n, allocation[n]) for n in new]))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _value_of(mapping: Any, key: str) -> Any:
    for k, v in mapping.value:
        if str(k.value) == key:
            return v
    return None


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _number_edit(text: str, node: Any, value: int) -> tuple[int, int, str]:
    """Replace the scalar's token (after any anchor or tag), keeping its quotes if it has them."""
    start, end = node.start_mark.index, node.end_mark.index
    m = _PROPERTIES.match(text, start, end)
    if m:
        start = m.end()
    token = text[start:end]
    quote = token[0] if token[:1] in ("'", '"') else ""
    return start, end, f"{quote}{value}{quote}"


def _content_end(node: Any) -> int:
    """The text index just after the last character that belongs to `node`."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        if isinstance(node, MappingNode):
            return max(_content_end(last[0]), _content_end(last[1]))
        return _content_end(last)
    return int(node.end_mark.index)


def _append_edit(text: str, slices: Any, items: list[tuple[str, int]]) -> tuple[int, int, str]:
    """Add `name: value` entries at the end of the slices mapping, marked with a comment."""
    newline = "\r\n" if "\r\n" in text else "\n"
    if slices.flow_style:
        close = slices.end_mark.index - 1  # the closing brace
        while close > 0 and text[close] != "}":
            close -= 1
        sep = ", " if slices.value else ""
        body = ", ".join(f"{n}: {v}" for n, v in items)
        line_end = text.find("\n", slices.end_mark.index)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[slices.end_mark.index : line_end].strip()
        names = ", ".join(n for n, _ in items)
        if not rest:
            # put the comment after the closing brace, at the end of its line
            return (
                close,
                slices.end_mark.index,
                f"{sep}{body}}}  {ADDED_COMMENT}: {names}",
            )
        # something (a comment) follows on that line: mark the addition on a line of its own
        kept = text[close:line_end].rstrip("\r")
        at_eof = line_end == len(text)
        return (
            close,
            line_end if at_eof else line_end + 1,
            f"{sep}{body}{kept}{newline}{ADDED_COMMENT}: {names}{'' if at_eof else newline}",
        )
    end = _content_end(slices)
    line_end = text.find("\n", end)
    indent = " " * slices.value[0][0].start_mark.column
    lines = "".join(f"{indent}{n}: {v}  {ADDED_COMMENT}{newline}" for n, v in items)
    if line_end < 0:  # the last slice ends the file without a newline
        return len(text), len(text), newline + lines.removesuffix(newline)
    return line_end + 1, line_end + 1, lines


def write_atomically(target: Path, data: bytes) -> None:
    """Replace `target` with `data`, whole or not at all, keeping the permissions of a file
    that is there (the folder is made when it is not): a temporary file in the same folder,
    flushed to disk, then os.replace. Raises OSError (the caller says which file it was, in its
    own words); no temporary file is left behind. The one atomic writer: budgets and reports."""
    import tempfile  # only when something is written: 3 ms of start-up otherwise

    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---- loading ---------------------------------------------------------------------------------


def parse_budget(text: str, source: str) -> Budget:
    """Parse YAML text into a Budget; every problem becomes one line `source:line: key: what`."""
    data, lines = read_yaml(text, source)
    if data is None:
        raise BudgetError(
            f"{source}: the budget file is empty; run `budgetdiff schema` to see keys"
        )
    return validate_budget(data, source, lines)


def validate_budget(data: object, source: str, lines: Mapping[Loc, int] | None = None) -> Budget:
    """A Budget from parsed data (YAML's, or a dict from Python). A BudgetError names every
    problem, one line each, in the file's order; `lines` (each key's line) places them."""
    if not isinstance(data, Mapping):
        raise BudgetError(
            f"{source}: the budget must be a mapping of keys, see `budgetdiff schema`"
        )
    try:
        return Budget.model_validate(data)
    except ValidationError as e:
        from budgetdiff.budget.problems import problem_lines  # a budget with problems only

        raise BudgetError("\n".join(problem_lines(e, data, source, lines or {}))) from None


def load_budget(path: Path) -> Budget:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BudgetError(
            f"{path}: no such budget file; pass --budget FILE or create budget.yml "
            "(`budgetdiff schema` lists the keys)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise BudgetError(f"{path}: cannot read the budget file ({e})") from None
    return parse_budget(text, str(path))
