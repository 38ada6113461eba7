#!/usr/bin/env bash
# What the browser tests need: Debian's Chromium and the npm packages of tests/browser/ (the
# Mermaid library GitHub draws diagrams with), pinned by tests/browser/package-lock.json.
# Re-running is cheap: apt only when chromium is missing, npm only when the lock changed.
set -euo pipefail
cd "$(dirname "$0")/.."
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-browser: install $* (e.g. apt-get install $*); the browser tests need it" >&2
    return 0
  fi
  echo "setup-browser: installing $* with apt-get (as root)" >&2
  [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
command -v chromium >/dev/null 2>&1 || apt_install chromium
command -v npm >/dev/null 2>&1 || apt_install nodejs npm
# the comment's ✅ ⚠️ ❌ in screenshots (make screenshot); the tests do not need it
{ command -v fc-list >/dev/null 2>&1 && fc-list | grep -q "Noto Color Emoji"; } || apt_install fonts-noto-color-emoji
if command -v npm >/dev/null 2>&1; then
  stamp="tests/browser/node_modules/.installed-$(cksum tests/browser/package-lock.json | cut -d' ' -f1)"
  if [ ! -f "$stamp" ]; then
    (cd tests/browser && npm ci --no-audit --no-fund --silent)
    touch "$stamp"
  fi
fi
