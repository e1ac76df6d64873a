#!/usr/bin/env bash
# Lints the Dockerfile with dockerfile-utils (npm). Installs node/npm from
# Debian when missing and the linter into a cache folder outside the tree.
# Fails on any problem the linter reports.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
if ! command -v npm >/dev/null 2>&1; then
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends nodejs npm
fi

tools="${XDG_CACHE_HOME:-$HOME/.cache}/bnn-lint"
if [ ! -x "$tools/node_modules/.bin/dockerfile-utils" ]; then
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" dockerfile-utils@0.16.3 >/dev/null
fi
report=$("$tools/node_modules/.bin/dockerfile-utils" lint Dockerfile 2>&1 || true)
if [ -n "$report" ]; then
  echo "$report"
  echo "lint-dockerfile: Dockerfile has problems" >&2
  exit 1
fi
echo "lint-dockerfile: Dockerfile clean"
