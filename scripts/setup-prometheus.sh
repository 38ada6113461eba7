#!/usr/bin/env bash
# What the live-Prometheus tests (tests/prometheus/) need: Debian's `prometheus` package, for
# `prometheus` and `promtool`. Re-running is cheap: apt only when either is missing. The
# package's service is not started (the tests start their own on 127.0.0.1).
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-prometheus: install prometheus (e.g. apt-get install prometheus); the live-Prometheus tests need it" >&2
  exit 0
fi
echo "setup-prometheus: installing prometheus with apt-get (as root)" >&2
[ -n "${APT_UPDATED:-}" ] || apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
