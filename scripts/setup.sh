#!/usr/bin/env bash
# Create .venv and install budgetdiff into it: `runtime` (what `budgetdiff demo` needs) or `dev`
# (lint, types, tests). Re-running is cheap: a stamp per pyproject.toml version skips pip.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-dev}
venv=${VENV:-.venv}
python=${PYTHON:-python3}
stamp="$venv/.installed-$what-$(cksum pyproject.toml | cut -d' ' -f1)"
[ -f "$stamp" ] && exit 0
sum=$(cksum pyproject.toml | cut -d' ' -f1)
[ -f "$venv/.installed-dev-$sum" ] && exit 0
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
extra=""
[ "$what" = dev ] && extra="[dev]"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".$extra"
touch "$stamp"
