#!/usr/bin/env bash
# Installs everything hc needs on Debian/Ubuntu (run as root or with sudo)
# and builds it: the first of the README's two commands runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential scons pkg-config libltdl-dev libcunit1-dev \
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo \
  libjansson-dev libpng-dev valgrind clang clang-format python3 python3-venv python3-pip \
  openmpi-bin libopenmpi-dev >/dev/null
# SciPy >= 1.11 (Debian's is older) and NumPy for the reference tests and
# the CPU peers of the benchmarks, and pytest for the Python tests, in a
# virtual environment in the checkout.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check 'scipy>=1.11' numpy matplotlib pytest
scons -Q -j2
