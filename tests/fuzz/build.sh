#!/usr/bin/env bash
# Builds the fuzz targets: clang's libFuzzer with AddressSanitizer and
# UBSan. The core's sources are compiled straight into a static archive
# (instrumented, hidden internals reachable: hc__param_parse, hc__pp_parse,
# the descriptor checks), so a target links only what it uses.
#
#   tests/fuzz/build.sh [BUILDDIR]        (default build-fuzz)
#
# Targets land in BUILDDIR/fuzz/<target>. Objects are rebuilt when their
# source or a header they include changed (compiler-written .d files).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-fuzz}
CC=${CC:-clang}
if ! command -v "$CC" >/dev/null; then
  echo "fuzz: $CC not found (apt-get install clang)" >&2
  exit 2
fi
mkdir -p "$out/fuzz/obj" "$out/config"
# One build at a time in a build directory (runs started together share it).
exec 9>"$out/fuzz/.build.lock"
flock 9
# The one configured value the core needs (context.c): no install directory
# is searched by the fuzz targets anyway.
cfg="$out/config/hc_config.h"
if [ ! -f "$cfg" ]; then
  printf '#define HC_INSTALL_PLUGIN_DIR "/nonexistent/hc/plugins"\n#define HC_CUDA_PATH "/nonexistent"\n' >"$cfg"
fi

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -g -O1 -Wall -Wextra -Wno-unused-parameter -pthread -D_GNU_SOURCE=1 -Iinclude -Icore/runtime -Icore/pipeline -I$out/config -Itests/fuzz"

# obj SRC OBJ EXTRA: compiles when OBJ is missing or older than any
# dependency recorded in its .d file.
stale() {
  local obj=$1 dep=${1%.o}.d
  [ -f "$obj" ] && [ -f "$dep" ] || return 0
  local f
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$dep"); do
    [ "$f" -nt "$obj" ] && return 0
  done
  return 1
}

compile() { # src obj extra-flags
  if stale "$2"; then
    echo "  CC $1"
    # shellcheck disable=SC2086
    $CC $CFLAGS $SAN $3 -MMD -MF "${2%.o}.d" -c "$1" -o "$2"
  fi
}
export -f stale compile
export CC CFLAGS SAN

# The core, instrumented for coverage (fuzzer-no-link), in parallel.
ls core/runtime/*.c core/pipeline/*.c | xargs -P "$(nproc)" -I{} bash -c \
  'src={}; compile "$src" "'"$out"'/fuzz/obj/core_$(basename "${src%.c}").o" -fsanitize=fuzzer-no-link'
lib="$out/fuzz/libhc_fuzz.a"
objs=$(ls "$out"/fuzz/obj/core_*.o)
# Objects of core files that no longer exist must not linger in the archive.
for o in $objs; do
  b=$(basename "$o" .o)
  [ -f "core/runtime/${b#core_}.c" ] || [ -f "core/pipeline/${b#core_}.c" ] || rm -f "$o" "${o%.o}.d"
done
objs=$(ls "$out"/fuzz/obj/core_*.o)
rebuild_lib=0
[ -f "$lib" ] || rebuild_lib=1
for o in $objs; do [ "$o" -nt "$lib" ] && rebuild_lib=1; done
if [ $rebuild_lib = 1 ]; then
  rm -f "$lib"
  # shellcheck disable=SC2086
  ar rcs "$lib" $objs
fi

LIBS="-lltdl -ldl -lm -pthread"
for src in tests/fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  compile "$src" "$out/fuzz/obj/$t.o" -fsanitize=fuzzer-no-link
  extra=""
  # The descriptor target puts its fake plugin where the loader would put
  # a plugin file's descriptor (see fuzz_descriptor.c).
  [ "$t" = fuzz_descriptor ] && extra="-Wl,--wrap=hc__load_plugins"
  if [ ! -x "$out/fuzz/$t" ] || [ "$out/fuzz/obj/$t.o" -nt "$out/fuzz/$t" ] || [ "$lib" -nt "$out/fuzz/$t" ]; then
    echo "  LD $t"
    # shellcheck disable=SC2086
    $CC $SAN -fsanitize=fuzzer "$out/fuzz/obj/$t.o" "$lib" $extra $LIBS -o "$out/fuzz/$t"
  fi
done
