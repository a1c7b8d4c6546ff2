#!/usr/bin/env bash
# Fails when src/generated/graphql.ts is not exactly what `npm run codegen` makes from schema/*.graphql
# and codegen.ts. Generates into a temporary file, so the working tree is never touched. CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

committed=src/generated/graphql.ts
codegen=node_modules/.bin/graphql-codegen
if [ ! -x "$codegen" ]; then
  echo "check-generated: $codegen not found; run 'npm ci' first." >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! CODEGEN_OUTPUT="$tmp/graphql.ts" "$codegen" --config codegen.ts >"$tmp/codegen.log" 2>&1; then
  cat "$tmp/codegen.log" >&2
  echo "check-generated: code generation failed (see above)." >&2
  exit 1
fi

if [ ! -f "$committed" ]; then
  echo "check-generated: $committed is missing: run 'npm run codegen' and commit the result." >&2
  exit 1
fi

if ! diff -u --label "$committed (committed)" --label "$committed (from schema/)" \
  "$committed" "$tmp/graphql.ts" >"$tmp/diff"; then
  echo "check-generated: $committed is stale: run 'npm run codegen' and commit the result." >&2
  echo "Difference (first 60 lines):" >&2
  head -n 60 "$tmp/diff" >&2
  exit 1
fi

echo "check-generated: $committed is up to date."
