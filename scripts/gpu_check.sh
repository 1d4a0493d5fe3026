#!/usr/bin/env bash
# End-to-end check of the CUDA and NVML paths on a GPU machine that has PyTorch with CUDA and an
# NVIDIA driver (paddle not needed): device vs host time for abs and multiply through the torch
# runner, an NVML telemetry summary of an LSTM training loop, and one result stored into a temporary
# SQLite history. Runs from a plain copy of the repository (nothing installed, no network) in well
# under 3 minutes. Exits non-zero without a CUDA device.
#
#   bash scripts/gpu_check.sh            # PYTHON=/path/to/python to choose the interpreter
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"

if command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader 2>&1 | head -n 1)"
fi

# The harness's own dependencies that the check imports: numpy and nvidia-ml-py (pynvml).
"$python" - <<'EOF'
import importlib.util, sys
missing = [m for m in ("numpy", "pynvml") if importlib.util.find_spec(m) is None]
if missing:
    print(f"gpu_check: WARNING: not importable: {', '.join(missing)}", file=sys.stderr)
EOF

PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec timeout 170 "$python" scripts/gpu_check.py "$@"
