#!/usr/bin/env bash
# Fails when a generated file is stale: the SDL under schema/, src/generated/graphql-enum-codes.ts and
# src/generated/fhir-resources.ts
# (`npm run generate:schema`, from the FHIR definitions and the operation registry), and
# src/generated/graphql.ts and examples/typed-client/generated.ts (`npm run codegen`, from schema/*.graphql,
# the example's documents, codegen.ts and codegen/). Generates into a
# temporary folder (SCHEMA_OUTPUT_DIR, CODEGEN_OUTPUT), so the working tree is never touched. CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

schema_files=(
  schema/fhir-types.graphql
  schema/fhir-inputs.graphql
  schema/fhir-api.graphql
  schema/fhir-operations.graphql
  src/generated/graphql-enum-codes.ts
  src/generated/fhir-resources.ts
)
codegen_file=src/generated/graphql.ts
example_file=examples/typed-client/generated.ts
tsx=node_modules/.bin/tsx
codegen=node_modules/.bin/graphql-codegen
for tool in "$tsx" "$codegen"; do
  if [ ! -x "$tool" ]; then
    echo "check-generated: $tool not found; run 'npm ci' first." >&2
    exit 1
  fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stale=0

# Compares a committed file with its fresh version; both missing is fine (fhir-operations.graphql
# is only written when there are operations).
compare() {
  local committed="$1" fresh="$2" command="$3"
  if [ ! -f "$committed" ] && [ ! -f "$fresh" ]; then return 0; fi
  if [ ! -f "$fresh" ]; then
    echo "check-generated: $committed is no longer generated: delete it (or run '$command') and commit." >&2
    stale=1
  elif [ ! -f "$committed" ]; then
    echo "check-generated: $committed is missing: run '$command' and commit the result." >&2
    stale=1
  elif ! diff -u --label "$committed (committed)" --label "$committed (generated now)" "$committed" "$fresh" >"$tmp/diff"; then
    echo "check-generated: $committed is stale: run '$command' and commit the result." >&2
    echo "Difference (first 60 lines):" >&2
    head -n 60 "$tmp/diff" >&2
    stale=1
  fi
}

# 1. The SDL and the enum code table, from the definitions.
if ! SCHEMA_OUTPUT_DIR="$tmp/root" "$tsx" scripts/generate-schema.ts >"$tmp/generate.log" 2>&1; then
  cat "$tmp/generate.log" >&2
  echo "check-generated: schema generation failed (see above)." >&2
  exit 1
fi
for file in "${schema_files[@]}"; do compare "$file" "$tmp/root/$file" 'npm run generate:schema'; done
# codegen reads the committed schema/ and enum codes: its check only means something once they are fresh.
if [ "$stale" -ne 0 ]; then
  echo "check-generated: after 'npm run generate:schema', also run 'npm run codegen'." >&2
  exit 1
fi

# 2. The TypeScript types, from schema/*.graphql and codegen.ts.
if ! CODEGEN_OUTPUT="$tmp/graphql.ts" CODEGEN_EXAMPLE_OUTPUT="$tmp/example.ts" "$codegen" --config codegen.ts >"$tmp/codegen.log" 2>&1; then
  cat "$tmp/codegen.log" >&2
  echo "check-generated: code generation failed (see above)." >&2
  exit 1
fi
compare "$codegen_file" "$tmp/graphql.ts" 'npm run codegen'
compare "$example_file" "$tmp/example.ts" 'npm run codegen'
if [ "$stale" -ne 0 ]; then exit 1; fi

echo "check-generated: the generated SDL, enum codes, FHIR resource types, $codegen_file and $example_file are up to date."
