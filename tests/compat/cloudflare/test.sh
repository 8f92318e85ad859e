#!/usr/bin/env bash
# Installs the pinned @cloudflare/sandbox (package-lock.json) and runs the compatibility tests:
# the published client, loaded in plain Node through register.mjs, against a real daemon
# ($SANDBOXD_BUILD/sandboxd, default ../../../build). Called by the project's `make e2e`.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node --import ./register.mjs --test --test-concurrency=1 ./*.test.mjs
