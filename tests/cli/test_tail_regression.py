"""Issue 34's case through `budgetdiff compare`: 8% of head's requests decode at twice the
per-token delay, 300 requests a side, as bench/power_oracle.py makes them (decode = output
tokens x per-token delay). The gate exists for this regression: it fails, naming decode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from bench import power_oracle
from tests.support.helpers import budget_file, compare_json, write_table


def _sides(seed: int, n: int, with_ids: bool) -> tuple[dict[str, np.ndarray], ...]:
    rng = np.random.default_rng(seed)
    base = power_oracle.table(rng, n, power_oracle.same)
    head = power_oracle.table(rng, n, power_oracle.tail)
    if with_ids:  # the same prompts and answer lengths on both sides: paired by id
        head["decode_ms"] = head["decode_ms"] / head["output_tokens"] * base["output_tokens"]
        head["output_tokens"] = base["output_tokens"]
        for side in (base, head):
            side["request_id"] = np.array([f"r{i}" for i in range(n)])
    return base, head


@pytest.mark.parametrize("with_ids", [False, True], ids=["unpaired", "paired-by-id"])
def test_eight_percent_twice_as_slow_in_decode_fails_naming_decode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_ids: bool
) -> None:
    base, head = _sides(34, 300, with_ids)
    slow = np.percentile(head["decode_ms"], 95) / np.percentile(base["decode_ms"], 95) - 1.0
    assert slow > 0.3  # the truth, by numpy on the same rows: the p95 of decode rose by a third+
    budget = budget_file(tmp_path, yaml.safe_dump(power_oracle.BUDGET))
    code, report = compare_json(
        capsys,
        write_table(tmp_path / "base.csv", base),
        write_table(tmp_path / "head.csv", head),
        budget,
    )
    assert code == 1
    rows = {r["name"]: r for r in report["slices"]}
    decode = rows["decode"]
    assert decode["change"] == "regression" and decode["family"] == "gate"
    assert decode["family_test"] == "permutation" and decode["family_p_value"] <= 0.05
    assert decode["paired"] is with_ids
    # the report's milliseconds are to the microsecond
    assert decode["base_ms"] == pytest.approx(np.percentile(base["decode_ms"], 95), abs=5e-4)
    assert decode["head_ms"] == pytest.approx(np.percentile(head["decode_ms"], 95), abs=5e-4)
    failing = [f for f in report["findings"] if f["fails"]]
    assert [(f["kind"], f["subject"]) for f in failing] == [("regression", "decode")], failing
    others = [r for name, r in rows.items() if name != "decode"]
    assert all(r["change"] != "regression" for r in others)
