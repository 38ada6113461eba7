# Quickstart: `make demo` (set up and run the bundled example), `make test` (lint, types, tests;
# as root on Debian or Ubuntu it first installs Chromium, Node.js and Prometheus with apt-get, and
# says so), `make test-fast` (the same without the browser and Prometheus tests: installs nothing
# outside .venv).
.PHONY: demo test test-fast bench golden screenshot lock clean

demo:
	@bash scripts/setup.sh runtime
	@.venv/bin/budgetdiff demo

test:
	@bash scripts/test.sh

test-fast:
	@bash scripts/test.sh --fast

bench:
	@bash scripts/setup.sh dev
	.venv/bin/python bench/bench_compare.py

golden:
	@bash scripts/setup.sh dev
	.venv/bin/pytest tests/golden tests/unit/test_budget_checks.py --update-golden

# PNGs of the rendered PR comment (headless Chromium, the real Mermaid): docs/comment-demo.png
# for the README, and every golden comment state under build/screenshots/.
screenshot:
	@bash scripts/setup.sh dev
	@bash scripts/setup-browser.sh
	.venv/bin/python tools/screenshot.py --all

clean:
	rm -rf .venv build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# Refresh uv.lock (the newest releases pyproject.toml allows) and uv's hash-pinned requirement
# for the Action; review the diff like code.
lock:
	@bash scripts/setup.sh dev
	.venv/bin/uv lock --upgrade
	echo uv | .venv/bin/uv pip compile - --upgrade --generate-hashes --universal --quiet \
		--custom-compile-command "make lock" -o uv-requirements.txt
