#!/usr/bin/env bash
# Lint, types, workflow security and tests: exactly what `make test` and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bin=${VENV:-.venv}/bin
# one command per line: `set -e` does not stop on the left side of `&&`
echo "== ruff"
"$bin/ruff" check budgetdiff tests bench tools
"$bin/ruff" format --check budgetdiff tests bench tools
echo "== mypy"; "$bin/mypy"
if [ -f action.yml ]; then
  echo "== zizmor"; "$bin/zizmor" --offline --no-progress action.yml .github/workflows/*.yml examples/workflows/*.yml
fi
echo "== browser (chromium, mermaid)"; bash scripts/setup-browser.sh
echo "== pytest"; "$bin/pytest"
