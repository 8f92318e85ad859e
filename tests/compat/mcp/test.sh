#!/usr/bin/env bash
# Installs the pinned @modelcontextprotocol/sdk (package-lock.json) and runs the MCP tests:
# the official SDK client against a real daemon ($SANDBOXD_BUILD/sandboxd and sbx, default
# ../../../build) over Streamable HTTP and over stdio. Called by the project's `make e2e`.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node --test --test-concurrency=1 ./*.test.mjs
