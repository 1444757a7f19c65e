#!/usr/bin/env bash
# System packages the tests need beyond Python: Debian's Chromium, driven headless (no browser
# download) by the report/viewer and MLflow UI browser tests. Installs only what is missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: chromium is missing; install Debian's 'chromium' package (browser tests will skip)" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
