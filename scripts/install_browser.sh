#!/usr/bin/env bash
# A headless browser for the playground's tests (tests/e2e/playground): Debian's Chromium
# and its matching ChromeDriver, driven by Selenium (PyPI) with no browser or driver ever
# downloaded by a test tool. Installed here only when missing and we are root (CI: a fresh
# Debian 12 as root); otherwise this says how and `make setup` goes on (the browser
# tests then skip, naming the reason).
set -euo pipefail

packages=${BROWSER_PACKAGES:-"chromium chromium-driver"}

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "browser: $(chromium --version 2>/dev/null | head -1) and its driver already installed"
  exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: installing $packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086 # the package list is words
  apt-get install -y -q --no-install-recommends $packages >/dev/null
  echo "browser: $(chromium --version 2>/dev/null | head -1) installed"
  exit 0
fi
cat >&2 <<MSG
browser: chromium and chromedriver are not installed, and this is not root with apt-get:
browser:   sudo apt-get install -y --no-install-recommends $packages
browser: until then the playground's browser tests are skipped.
MSG
