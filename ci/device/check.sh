#!/usr/bin/env bash
# The device check of toktier's GPU route (docs/gpu.md). Run from the repository root on a GPU
# machine that has PyTorch and CUDA (Python 3.12) and no network, with ci/device/wheels/ and
# ci/device/cache/ carried (ci/device/prepare.sh makes them; ci/device/wheels-numpy/ too where the
# machine has no numpy):
#
#     bash ci/device/check.sh
#
# Installs the carried wheels (pip install --no-index) into a venv over the machine's own site
# packages (its torch), then, within CHECK_BUDGET_S seconds (default 540, under 10 minutes):
#   gpu-route      the GPU engine loads; what toktier reports about the route (gpu-route.json)
#   run-*          `verify run` over the default corpus: the GPU route (and the CPU route beside
#                  it) vs hf:deepseek-v3, tiktoken:o200k_base and tiktoken:cl100k_base
#   bench-*        throughput on 1 MB and 10 MB inputs: GPU route vs CPU route vs reference
#   unicode        `verify unicode`: every code point, DeepSeek-V3 vocabulary
#   vocab-sweep    `verify vocab sweep` of the DeepSeek-V3 vocabulary (the first 10,000 ids)
#   fuzz           `verify fuzz` for a fixed budget
# Each step has its own time limit and its own folder under the report folder ($OUT when set,
# else device-out/); a step that no longer fits the budget is recorded as skipped. Writes
# OUT/steps.tsv, OUT/summary.md and OUT/environment.txt. Exit 0: every step passed; 1: a step
# found a divergence, failed or was skipped; 2: the machine cannot run the check (no torch, the
# wheels did not install, or the GPU route did not load: then nothing after gpu-route runs).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
OUT_DIR="${OUT:-device-out}"
mkdir -p "$OUT_DIR/logs"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
PY="${PYTHON:-python3}"
BUDGET_S="${CHECK_BUDGET_S:-540}"
VENV="${DEVICE_VENV:-${TMPDIR:-/tmp}/verify-device-venv}"
STARTED=$(date +%s)

export VERIFY_CACHE_DIR="$REPO/ci/device/cache" VERIFY_OFFLINE=1 TOKTIER_OFFLINE=1 HF_HUB_OFFLINE=1
export TOKTIER_HOME="${TOKTIER_HOME:-${TMPDIR:-/tmp}/verify-device-toktier}" PIP_NO_INDEX=1
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

# the engines under test (overridable only for a dry run of this script off the GPU machine), and
# toktier's CPU route beside each: a divergence both routes share is toktier's (it always matches
# added-token literals), one only the GPU route has is the GPU's
GPU_DEEPSEEK="${GPU_DEEPSEEK:-toktier:deepseek-v3?device=cuda}"
GPU_O200K="${GPU_O200K:-toktier:o200k_base?device=cuda}"
GPU_CL100K="${GPU_CL100K:-toktier:cl100k_base?device=cuda}"
CPU_DEEPSEEK=toktier:deepseek-v3
CPU_O200K=toktier:o200k_base
CPU_CL100K=toktier:cl100k_base

printf 'step\texit\tseconds\tcommand\n' > "$OUT_DIR/steps.tsv"
FAILED=0

left() { echo $(( BUDGET_S - ($(date +%s) - STARTED) )); }
one_line() { printf '%s' "$1" | tr '\n\t' '  ' | cut -c1-400; }

step() {  # step NAME LIMIT_S COMMAND...: run with a time limit (SIGINT first: partial reports are kept)
    local name=$1 limit=$2 remaining t0 rc
    shift 2
    remaining=$(left)
    if (( remaining < 20 )); then
        printf '%s\tskipped\t0\t%s\n' "$name" "$(one_line "$*")" >> "$OUT_DIR/steps.tsv"
        FAILED=1
        return
    fi
    (( limit > remaining )) && limit=$remaining
    t0=$(date +%s)
    timeout --signal=INT --kill-after=15 "$limit" "$@" > "$OUT_DIR/logs/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$(one_line "$*")" >> "$OUT_DIR/steps.tsv"
    (( rc != 0 )) && FAILED=1
    tail -n 2 "$OUT_DIR/logs/$name.log" | sed "s/^/[$name] /"
}

# --- the machine ----------------------------------------------------------------------------
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    uname -a
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "no nvidia-smi"
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count())' 2>&1
    nproc
} > "$OUT_DIR/environment.txt"
cat "$OUT_DIR/environment.txt"
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "check.sh: $PY has no torch: this is not the GPU machine the check needs" >&2
    exit 2
fi
if [ ! -d ci/device/wheels ] || [ ! -d ci/device/cache/vocab ]; then
    echo "check.sh: ci/device/wheels or ci/device/cache is missing: run ci/device/prepare.sh and carry both" >&2
    exit 2
fi

# --- install the carried wheels ---------------------------------------------------------------
grep -E '^[A-Za-z0-9]' ci/device/wheels.txt > "$OUT_DIR/logs/requirements.txt"
if "$PY" -c 'import numpy' 2>/dev/null; then  # keep the machine's numpy (its torch was built with it)
    grep -v '^numpy==' "$OUT_DIR/logs/requirements.txt" > "$OUT_DIR/logs/requirements.tmp"
    mv "$OUT_DIR/logs/requirements.tmp" "$OUT_DIR/logs/requirements.txt"
elif [ ! -d ci/device/wheels-numpy ]; then
    echo "check.sh: this machine has no numpy: carry ci/device/wheels-numpy too" >&2
    exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv --system-site-packages "$VENV" 2>/dev/null ||
        "$PY" -m venv --system-site-packages --without-pip "$VENV" || { echo "check.sh: cannot create $VENV" >&2; exit 2; }
fi
VPY="$VENV/bin/python"
if "$VPY" -m pip --version > /dev/null 2>&1; then PIP=("$VPY" -m pip); else PIP=("$PY" -m pip --python "$VPY"); fi
LINKS=(--find-links ci/device/wheels)
[ -d ci/device/wheels-numpy ] && LINKS+=(--find-links ci/device/wheels-numpy)
step install 180 "${PIP[@]}" install --no-index "${LINKS[@]}" -r "$OUT_DIR/logs/requirements.txt"
if ! "$VPY" -c 'import toktier, tiktoken, tokenizers, hypothesis, verify.cli' 2>> "$OUT_DIR/logs/install.log"; then
    echo "check.sh: the carried wheels did not install (see $OUT_DIR/logs/install.log)" >&2
    exit 2
fi
VERIFY=("$VPY" -m verify.cli)
COMMON=(--no-progress)

# --- the GPU route --------------------------------------------------------------------------
step gpu-route 90 "$VPY" -c "
import json, sys
from verify.engines import build_engine
from verify.errors import VerifyError
try:
    engine = build_engine(sys.argv[1])
except VerifyError as exc:
    print(f'GPU route unavailable: {exc}'); sys.exit(2)
notes = engine.run_notes()
json.dump({'identity': engine.identity().as_dict(), 'capabilities': engine.capabilities.as_dict(), 'notes': notes},
          open(sys.argv[2], 'w'), indent=1, default=str)
print('GPU route:', json.dumps((notes.get('gpu') or {}).get('route_key'), default=str))
" "$GPU_DEEPSEEK" "$OUT_DIR/gpu-route.json"
GPU_ROUTE_RC=$(awk -F'\t' '$1 == "gpu-route" {print $2}' "$OUT_DIR/steps.tsv")

# --- differential runs, throughput, sweeps, fuzzing (only when the GPU route loaded) ---------------
if [ "$GPU_ROUTE_RC" = 0 ]; then
step run-deepseek-v3 100 "${VERIFY[@]}" run --reference hf:deepseek-v3 --candidate "$GPU_DEEPSEEK" \
    --candidate "$CPU_DEEPSEEK" --corpus default --out "$OUT_DIR/run-deepseek-v3" --minimize-budget 15 "${COMMON[@]}"
step run-o200k 90 "${VERIFY[@]}" run --reference tiktoken:o200k_base --candidate "$GPU_O200K" \
    --candidate "$CPU_O200K" --corpus default --out "$OUT_DIR/run-o200k" --minimize-budget 15 "${COMMON[@]}"
step bench-deepseek-v3 110 "$VPY" -m verify.device_bench --reference hf:deepseek-v3 \
    --engine "$GPU_DEEPSEEK" --engine "$CPU_DEEPSEEK" --sizes 1000000,10000000 --repeats 1 \
    --out "$OUT_DIR/bench-deepseek-v3"
step unicode 90 "${VERIFY[@]}" unicode --reference hf:deepseek-v3 --candidate "$GPU_DEEPSEEK" \
    --out "$OUT_DIR/unicode-deepseek-v3" "${COMMON[@]}"
# in-process: a divergence's token pieces are read while the next batch is in flight
step vocab-sweep 70 "${VERIFY[@]}" vocab sweep --reference hf:deepseek-v3 --candidate "$GPU_DEEPSEEK" \
    --candidate "$CPU_DEEPSEEK" --limit 10000 --minimize-budget 10 --in-process --out "$OUT_DIR/vocab-sweep-deepseek-v3" "${COMMON[@]}"
step fuzz 70 "${VERIFY[@]}" fuzz --reference hf:deepseek-v3 --candidate "$GPU_DEEPSEEK" --budget 30 \
    --seed 0 --database "$OUT_DIR/fuzz-db" --out "$OUT_DIR/fuzz-deepseek-v3"
step bench-o200k 80 "$VPY" -m verify.device_bench --reference tiktoken:o200k_base \
    --engine "$GPU_O200K" --engine "$CPU_O200K" --sizes 1000000,10000000 --repeats 1 \
    --out "$OUT_DIR/bench-o200k"
step run-cl100k 80 "${VERIFY[@]}" run --reference tiktoken:cl100k_base --candidate "$GPU_CL100K" \
    --candidate "$CPU_CL100K" --corpus default --out "$OUT_DIR/run-cl100k" --minimize-budget 15 "${COMMON[@]}"
fi

# --- summary --------------------------------------------------------------------------------------
{
    echo "# Device check: toktier's GPU route"
    echo
    echo "Started $(date -u -d "@$STARTED" +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - STARTED )) s in all."
    echo
    echo '```'
    cat "$OUT_DIR/environment.txt"
    echo '```'
    echo
    echo "| step | exit | seconds | last line |"
    echo "|---|---|---:|---|"
    tail -n +2 "$OUT_DIR/steps.tsv" | while IFS=$'\t' read -r name rc secs _; do
        last=$(tail -n 1 "$OUT_DIR/logs/$name.log" 2>/dev/null | tr '|' '/' | cut -c1-200)
        echo "| $name | $rc | $secs | $last |"
    done
    for bench in "$OUT_DIR"/bench-*/bench.md; do
        [ -f "$bench" ] && { echo; cat "$bench"; }
    done
} > "$OUT_DIR/summary.md"
echo "check.sh: reports in $OUT_DIR (summary.md, steps.tsv)"
if [ "$GPU_ROUTE_RC" != 0 ]; then
    echo "check.sh: the GPU route did not load here (logs/gpu-route.log); nothing else was run" >&2
    exit 2
fi
exit "$FAILED"
