#!/usr/bin/env bash
# Download the wheels of ci/device/wheels.txt for the GPU machine's Python (CPython 3.12, manylinux
# x86_64) into ci/device/wheels/ (numpy into ci/device/wheels-numpy/). Run here, where PyPI is
# reachable; the GPU machine has no network. toktier's wheel is manylinux_2_34, so newer manylinux
# tags are allowed beside manylinux2014. --no-deps: wheels.txt is already the whole closure, and
# check.sh's `pip install --no-index` resolves it again there (a missing wheel fails loudly).
#     bash ci/device/download-wheels.sh            # PIP=... to use another pip
set -euo pipefail
cd "$(dirname "$0")/../.."
PIP="${PIP:-.venv/bin/pip}"
PLATFORMS=(--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64)
download() {  # download DIR REQUIREMENTS-FILE
    "$PIP" download --only-binary=:all: --python-version 3.12 --implementation cp "${PLATFORMS[@]}" \
        --no-deps --quiet -d "$1" -r "$2"
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
grep -E '^[A-Za-z0-9]' ci/device/wheels.txt | grep -v '^numpy==' > "$tmp/main.txt"
grep '^numpy==' ci/device/wheels.txt > "$tmp/numpy.txt"
mkdir -p ci/device/wheels ci/device/wheels-numpy
download ci/device/wheels "$tmp/main.txt"
download ci/device/wheels-numpy "$tmp/numpy.txt"
du -sh ci/device/wheels ci/device/wheels-numpy
