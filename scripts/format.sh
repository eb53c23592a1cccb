#!/usr/bin/env bash
# hc's C style (.clang-format; include/ wraps at 80 columns):
#   scripts/format.sh           rewrites every tracked C file in place
#   scripts/format.sh --check   lists the files that differ and exits 1 (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null; then
  echo "format.sh: $cf not found (apt-get install clang-format)" >&2
  exit 2
fi
# The tree is formatted with clang-format 14 (Debian 12's); another major
# version lays some constructs out differently, so it checks nothing.
want=14
have=$("$cf" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$have" != "$want" ]; then
  echo "format.sh: $cf is version ${have:-unknown}, the tree's style is clang-format $want's: not checked" >&2
  exit 0
fi
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f (run scripts/format.sh)"
      bad=1
    fi
  done
  [ $bad = 0 ] && echo "format: ${#files[@]} files formatted"
  exit $bad
fi
"$cf" --style=file -i "${files[@]}"
