#!/usr/bin/env bash
# Installs hc into a temporary prefix, builds examples/embed.c there with
# pkg-config as a user would, and runs it and the installed hcrun.
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d /tmp/hc-prefix-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
pass=0 fail=0
check() { if "$@"; then pass=$((pass + 1)); else echo "FAILED: $*"; fail=$((fail + 1)); fi; }
scons -Q -j2 builddir=build-install PREFIX="$prefix" install >/dev/null || { echo "install failed"; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
check test "$(pkg-config --variable=plugindir hc)" = "$prefix/lib/hc/plugins"
check test -f "$prefix/include/hc/plugin.h"
check test -f "$prefix/lib/hc/plugins/backend-cpu.so"
check cc -std=c11 examples/embed.c $(pkg-config --cflags --libs hc) -o "$prefix/embed"
# Every installed ELF searches only the install's own lib/ for libraries: a
# RUNPATH entry that leaves the prefix (such as $ORIGIN/../../lib from bin/)
# names a directory any local user may create.
runpath_inside() {
  local f=$1 bad=0 entry dir
  local rp
  rp=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p')
  IFS=: read -ra entries <<<"$rp"
  for entry in "${entries[@]}"; do
    dir=${entry//\$ORIGIN/$(dirname "$f")}
    dir=$(realpath -m "$dir")
    if [ "$dir" != "$(realpath "$prefix/lib")" ]; then
      echo "$f: RUNPATH entry $entry resolves to $dir, outside $prefix/lib"
      bad=1
    fi
  done
  return $bad
}
nelf=0
while IFS= read -r f; do
  if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    nelf=$((nelf + 1))
    check runpath_inside "$f"
  fi
done < <(find "$prefix" -type f)
check test "$nelf" -ge 3
# The installed tools find the installed plugins with no environment set.
check env -u HC_PLUGIN_PATH "$prefix/embed"
check env -u HC_PLUGIN_PATH "$prefix/bin/hcrun" --list
# libhc-grid is its own library with its own pkg-config file; the installed
# multigrid plugin finds it beside libhc.
check test "$(pkg-config --libs-only-l hc-grid | xargs)" = "-lhc-grid -lhc"
check env -u HC_PLUGIN_PATH "$prefix/bin/hcrun" --backend=cpu --workload=multigrid n=17 --verify
# The Python package: pip installs it, and it finds the installed libhc
# (pkg-config) and its plugins, not the build tree's.
check .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --target "$prefix/python" ./python
check env -u HC_PLUGIN_PATH PYTHONPATH="$prefix/python" .venv/bin/python -c "
import hc, numpy as np
assert hc.load_library()._name.startswith('$prefix/'), hc.load_library()._name
with hc.Context() as ctx:
    r = ctx.run('simpson', input=np.ones((9, 9, 9)), h=0.125, device='cpu')
    assert abs(r.metrics['integral'] - 1.0) < 1e-12, r.metrics
"
echo "install check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
