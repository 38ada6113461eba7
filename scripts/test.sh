#!/usr/bin/env bash
# Lint, types, workflow security and tests: exactly what `make test` and CI run. `--fast`
# (`make test-fast`) leaves out the browser and live-Prometheus tests and installs nothing
# outside .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
[ "${1:-}" = --fast ] && fast=true
if [ "$fast" = false ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  # said before anything is installed: root on Debian or Ubuntu gets system packages
  echo "== make test runs as root: it installs with apt-get whichever of chromium, nodejs, npm,"
  echo "   fonts-noto-color-emoji (browser tests) and prometheus (deploy-gate tests) is missing,"
  echo "   and the npm packages of tests/browser/. \`make test-fast\` skips those tests and installs none."
fi
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
if [ "$fast" = true ]; then
  echo "== pytest (fast: without tests/browser/ and tests/prometheus/)"
  "$bin/pytest" --ignore=tests/browser --ignore=tests/prometheus
  exit 0
fi
echo "== browser (chromium, mermaid)"; bash scripts/setup-browser.sh
echo "== prometheus (the deploy gate's live server)"; bash scripts/setup-prometheus.sh
echo "== pytest"; "$bin/pytest"
