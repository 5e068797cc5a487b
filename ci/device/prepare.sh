#!/usr/bin/env bash
# Prepare what the device check carries to the GPU machine (run here, where PyPI is reachable):
#   ci/device/wheels/        toktier and our dependencies (download-wheels.sh)   ~38 MiB
#   ci/device/wheels-numpy/  numpy, only for a machine without one               ~16 MiB
#   ci/device/cache/         the vocabulary cache (VERIFY_CACHE_DIR): cl100k_base, o200k_base,
#                            deepseek-v3, fetched and SHA-256-checked by `verify vocab pull`   ~9 MiB
# The device tool carries the working tree plus at most 8 ignored paths, 64 MiB in all: carry
# ci/device/wheels and ci/device/cache (and ci/device/wheels-numpy where numpy is missing, which
# only fits without anything else large). The converted tokenizer.json files are not carried:
# check.sh rebuilds them there from the carried ranks (seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash ci/device/download-wheels.sh
VERIFY_CACHE_DIR="$PWD/ci/device/cache" .venv/bin/verify vocab pull cl100k_base o200k_base deepseek-v3
# the pull fetches every vocabulary a bundle holds; keep the three the check uses
find ci/device/cache -mindepth 1 -maxdepth 2 ! -path ci/device/cache/vocab \
    ! -path ci/device/cache/vocab/cl100k_base ! -path ci/device/cache/vocab/o200k_base \
    ! -path ci/device/cache/vocab/deepseek-v3 -exec rm -rf {} +
du -sh ci/device/wheels ci/device/wheels-numpy ci/device/cache
