#!/usr/bin/env bash
# Installs the pinned dev dependencies, builds dist/ and runs the tests against a real daemon
# ($SANDBOXD_BUILD/sandboxd, default ../../build). Called by the project's `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund --loglevel=error
npm run build --silent
node --test --test-concurrency=1 test/*.test.mjs
