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
echo "== package (wheel and sdist, twine check --strict; what the release workflow builds)"
dist=$(mktemp -d)
trap 'rm -rf "$dist"' EXIT
"$bin/python" -m build --outdir "$dist" . > "$dist/build.log" 2>&1 || { cat "$dist/build.log"; exit 1; }
"$bin/twine" check --strict "$dist"/*.whl "$dist"/*.tar.gz
"$bin/python" -m zipfile -l "$dist"/*.whl | grep "budgetdiff/templates/budget.yml" >/dev/null \
  || { echo "the wheel lacks budgetdiff/templates/ (package-data)"; exit 1; }
echo "== browser (chromium, mermaid)"; bash scripts/setup-browser.sh
echo "== pytest"; "$bin/pytest"
