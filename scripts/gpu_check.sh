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

PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" timeout 170 "$python" scripts/gpu_check.py "$@"

# The same through the suite itself (plugin, sync timer, CUDA events, NVML sampler, store) when the
# harness's dependencies are importable here: the torch runner on the GPU place, short measurement.
if "$python" -c "import pytest_benchmark, pydantic, yaml, sqlalchemy, alembic" >/dev/null 2>&1; then
    db="$(mktemp -d)/gpu_check.sqlite"
    PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$python" -m pytest benchmark/ -q -p no:cacheprovider \
        --bench-framework torch --bench-place gpu --bench-quick --bench-db "sqlite:///$db" \
        --bench-json "${db%.sqlite}.json" -k "abs-1000x1000-fwd or elementwise_mul-x_50x128x1000-y_1x128x1000-fwd"
    "$python" - "${db%.sqlite}.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    dev = r.get("device_samples") or []
    dev_med = sorted(dev)[len(dev) // 2] if dev else None
    tel = (r.get("telemetry") or {}).get("summary") or {}
    print(f"suite: {r['case_id']} {r['place']} {r['status']} host median {r['stats'].get('median')} s, "
          f"device median {dev_med} s, telemetry samples {tel.get('samples')}, energy {tel.get('energy_j')} J")
EOF
else
    echo "suite: skipped (pytest-benchmark, pydantic, pyyaml, sqlalchemy or alembic not importable here)"
fi
