#!/usr/bin/env bash
# The harness's CUDA path on a GPU machine with PyTorch (CUDA), an NVIDIA driver and no paddle, in one
# prepared run of at most 8 minutes: one PASS/FAIL/SKIP line per check (tools/gpu_check.py says
# which), then `gpu_check: PASS|FAIL (...)`. Exit 0 only when nothing failed; 1 without a GPU.
#
#   bash tools/gpu_check.sh                      # PYTHON=/path/to/python chooses the interpreter
#   bash tools/gpu_check.sh --fetch-wheels [--python-version 3.11]   # on a machine with PyPI access:
#                                                  # download the wheels the check needs into tools/wheels/
#
# The machine needs no network: the harness's other dependencies (pydantic, PyYAML, SQLAlchemy,
# alembic, scipy, matplotlib, rich, psutil, nvidia-ml-py, pytest-benchmark) are installed from the wheels
# placed beside this script (tools/wheels/, or $GPU_CHECK_WHEELS) into a throwaway virtual environment
# that sees the system's torch; nothing is installed when they are importable already.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wheels="${GPU_CHECK_WHEELS:-$root/tools/wheels}"
python="${PYTHON:-python3}"
deps=(pydantic pyyaml sqlalchemy alembic scipy matplotlib rich psutil nvidia-ml-py pytest pytest-benchmark numpy)

if [ "${1:-}" = "--fetch-wheels" ]; then
    shift
    pyver="3.11"
    if [ "${1:-}" = "--python-version" ]; then pyver="$2"; shift 2; fi
    mkdir -p "$wheels"
    "$python" -m pip download --only-binary=:all: --python-version "$pyver" \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        -d "$wheels" "${deps[@]}"
    echo "gpu_check: wheels for Python $pyver in $wheels"
    exit 0
fi

cd "$root"
imports="import numpy, pydantic, yaml, sqlalchemy, alembic, scipy, matplotlib, rich, psutil, pynvml, pytest_benchmark"
if ! "$python" -c "$imports" >/dev/null 2>&1; then
    if ! ls "$wheels"/*.whl >/dev/null 2>&1; then
        echo "FAIL  env                    the harness's dependencies are not importable and there are no wheels in $wheels (run --fetch-wheels where PyPI is reachable)"
        echo "gpu_check: FAIL (dependencies)"
        exit 1
    fi
    venv="$(mktemp -d)/venv"
    "$python" -m venv --system-site-packages "$venv"   # keeps the system's torch
    "$venv/bin/python" -m pip install -q --no-index --find-links "$wheels" "${deps[@]}"
    python="$venv/bin/python"
fi

if command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,mig.mode.current,clocks.sm,power.draw --format=csv,noheader 2>&1 | head -n 1)"
fi

# 8 minutes in all; the script itself stays well inside (the suite runs are capped at 150 s each).
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec timeout 470 "$python" tools/gpu_check.py "$@"
