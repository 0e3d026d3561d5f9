#!/usr/bin/env bash
# Installs the npm packages the browser tests inject into pages, into a project-local folder
# (tests/.assets, gitignored): axe-core for the console's accessibility check. Skipped when present.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=tests/.assets
AXE_VERSION="4.10.3"
if [ -f "$DEST/node_modules/axe-core/axe.min.js" ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" != "0" ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
mkdir -p "$DEST"
npm install --silent --no-audit --no-fund --no-save --prefix "$DEST" "axe-core@$AXE_VERSION" >/dev/null
test -f "$DEST/node_modules/axe-core/axe.min.js"
