#!/usr/bin/env bash
# Fails when the committed generated Rust differs from what the pinned flatc produces now.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/regenerate.sh" "$tmp"
if ! diff -ru "$here/src/generated" "$tmp"; then
  echo "schema/check.sh: src/generated is stale; run schema/regenerate.sh and commit" >&2
  exit 1
fi
echo "schema/check.sh: generated code matches the schemas"
