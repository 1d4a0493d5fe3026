"""Question (issue 44): can a config that `benchmark validate` passes still kill or hang a worker,
through an op or layer whose inputs carry indices, counts, lengths, labels or boxes?

Hostile configs are generated from a base case per op and layer of `configs/index_inputs.yaml` that
has a generator rule (the three RNN layers included), by mutations a stranger's YAML may make:
extreme value ranges of the data inputs, the last value of an index range only (`low: size - 1`),
the smallest and larger shapes (every dimension 1, or scaled up within the memory cap), other
integer and float dtypes, and extreme integer attributes (0, -1, 10^6, 2^31 - 1). Each is validated
with the framework's checks (`benchmark.config.load_file`); those that pass run one quick timing
trial in a confined worker under the suite's memory limit (`Worker.time`) with a per-trial time
limit, and each outcome is counted: ok, error (the op raised), limit (the memory limit, named),
death (the worker died: a signal) or hang (no answer in time). The target is 0 deaths and 0 hangs.

    python eval/fuzz_index_inputs.py [--seed 44] [--per-case 8] [--timeout 60] [--out DIR]

Prints one line per death or hang (the config is kept under --out) and the totals. A small fixed
sample runs in `tests/test_fuzz_sample.py`.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark import runners  # noqa: E402
from benchmark.config import indexed, load_file  # noqa: E402
from benchmark.execution.measure import MeasureSettings  # noqa: E402
from benchmark.execution.measure import asdict as measure_asdict  # noqa: E402
from benchmark.execution.workers import Worker  # noqa: E402
from benchmark.sandbox.limits import worker_memory_limit  # noqa: E402


def _op(name: str, op: str, inputs: dict, **fields) -> dict:
    return {"name": name, "kind": "op", "op": op, "inputs": inputs, "places": ["cpu"], **fields}


def _ix(shape, of, dim=0, dtype="int64", **more) -> dict:
    return {"shape": shape, "dtype": dtype, "index": {"of": of, "dim": dim, **more}}


# One valid base case per op (or layer) with a generator rule in the table; the mutations start here.
BASES: list[dict[str, Any]] = [
    _op("gather", "paddle.gather", {"x": {"shape": [16, 8]}, "index": _ix([5], "x", 1)}, attrs={"axis": 1}),
    _op("gather_nd", "paddle.gather_nd", {"x": {"shape": [5, 9, 7]}, "index": _ix([6, 3], "x", "min")}),
    _op("index_add", "paddle.index_add", {"x": {"shape": [8, 4]}, "index": _ix([3], "x"), "value": {"shape": [3, 4]}},
        attrs={"axis": 0}),
    _op("index_sample", "paddle.index_sample", {"x": {"shape": [4, 9]}, "index": _ix([4, 3], "x", 1)}),
    _op("index_select", "paddle.index_select", {"x": {"shape": [8, 4]}, "index": _ix([3], "x")}),
    _op("multiplex", "paddle.multiplex",
        {"inputs": {"tensors": [{"shape": [6, 4]}, {"shape": [6, 4]}]}, "index": _ix([6, 1], "inputs", "count", "int32")}),
    _op("put_along_axis", "paddle.put_along_axis",
        {"arr": {"shape": [6, 5]}, "indices": _ix([6, 1], "arr", 1), "values": {"shape": [6, 1]}}, attrs={"axis": 1}),
    _op("take_along_axis", "paddle.take_along_axis", {"arr": {"shape": [6, 5]}, "indices": _ix([6, 2], "arr", 1)},
        attrs={"axis": 1}),
    _op("take", "paddle.take", {"x": {"shape": [6, 5]}, "index": _ix([7], "x")}),
    _op("scatter", "paddle.scatter", {"x": {"shape": [8, 3]}, "index": _ix([4], "x"), "updates": {"shape": [4, 3]}}),
    _op("scatter_nd_add", "paddle.scatter_nd_add",
        {"x": {"shape": [6, 6]}, "index": _ix([4, 2], "x", "min"), "updates": {"shape": [4]}}),
    _op("shard_index", "paddle.shard_index", {"input": {"shape": [8, 1], "dtype": "int64", "low": 0, "high": 100}},
        attrs={"index_num": 100, "nshards": 4, "shard_id": 0}),
    _op("bincount", "paddle.bincount", {"x": {"shape": [50], "dtype": "int64", "low": 0, "high": 20}}),
    _op("repeat_interleave", "paddle.repeat_interleave",
        {"x": {"shape": [20]}, "repeats": {"shape": [20], "dtype": "int64", "low": 0, "high": 5}}),
    _op("send_u_recv", "paddle.geometric.send_u_recv",
        {"x": {"shape": [30, 3]}, "src_index": _ix([50], "x"), "dst_index": _ix([50], "x")}),
    _op("send_ue_recv", "paddle.geometric.send_ue_recv",
        {"x": {"shape": [30, 3]}, "y": {"shape": [50, 3]}, "src_index": _ix([50], "x"), "dst_index": _ix([50], "x")}),
    _op("send_uv", "paddle.geometric.send_uv",
        {"x": {"shape": [30, 3]}, "y": {"shape": [7, 3]}, "src_index": _ix([50], "x"), "dst_index": _ix([50], "y")}),
    _op("segment_sum", "paddle.geometric.segment_sum",
        {"data": {"shape": [40, 3]}, "segment_ids": {**_ix([40], "data"), "values": "sorted"}}),
    _op("reindex_graph", "paddle.geometric.reindex_graph",
        {"x": {"shape": [5], "dtype": "int64", "low": 0, "high": 100},
         "neighbors": {"shape": [40], "dtype": "int64", "low": 0, "high": 100},
         "count": {"shape": [5], "dtype": "int32", "values": {"sum_of": "neighbors"}}}),
    _op("sample_neighbors", "paddle.geometric.sample_neighbors",
        {"row": {"shape": [300], "dtype": "int64", "values": {"nodes_of": "colptr"}},
         "colptr": {"shape": [41], "dtype": "int64", "values": {"colptr_of": "row"}},
         "input_nodes": {"shape": [25], "dtype": "int64", "values": {"nodes_of": "colptr"}}}, attrs={"sample_size": 4}),
    _op("weighted_sample_neighbors", "paddle.geometric.weighted_sample_neighbors",
        {"row": {"shape": [300], "dtype": "int64", "values": {"nodes_of": "colptr"}},
         "colptr": {"shape": [41], "dtype": "int64", "values": {"colptr_of": "row"}},
         "edge_weight": {"shape": [300], "low": 0.1, "high": 1.0},
         "input_nodes": {"shape": [25], "dtype": "int64", "values": {"nodes_of": "colptr"}}}, attrs={"sample_size": 4}),
    _op("accuracy", "paddle.metric.accuracy", {"input": {"shape": [8, 10]}, "label": _ix([8, 1], "input", 1)}),
    _op("viterbi_decode", "paddle.text.viterbi_decode",
        {"potentials": {"shape": [3, 7, 4]}, "transition_params": {"shape": [4, 4]},
         "lengths": _ix([3], "potentials", 1, low=1, inclusive=True)}),
    _op("embedding", "paddle.nn.functional.embedding", {"x": _ix([4, 6], "weight"), "weight": {"shape": [20, 8]}}),
    _op("one_hot", "paddle.nn.functional.one_hot", {"x": {"shape": [6], "dtype": "int64", "low": 0, "high": 10}},
        attrs={"num_classes": 10}),
    _op("max_unpool1d", "paddle.nn.functional.max_unpool1d",
        {"x": {"shape": [2, 3, 9]}, "indices": {"shape": [2, 3, 9], "dtype": "int64", "values": {"unpool_of": "x"}}},
        attrs={"kernel_size": 2}),
    _op("max_unpool2d", "paddle.nn.functional.max_unpool2d",
        {"x": {"shape": [2, 3, 5, 7]}, "indices": {"shape": [2, 3, 5, 7], "dtype": "int32", "values": {"unpool_of": "x"}}},
        attrs={"kernel_size": 3, "stride": 2, "padding": 1}),
    _op("max_unpool3d", "paddle.nn.functional.max_unpool3d",
        {"x": {"shape": [1, 2, 3, 4, 5]}, "indices": {"shape": [1, 2, 3, 4, 5], "dtype": "int64", "values": {"unpool_of": "x"}}},
        attrs={"kernel_size": 2}),
    _op("ctc_loss", "paddle.nn.functional.ctc_loss",
        {"log_probs": {"shape": [30, 4, 6]}, "labels": _ix([4, 10], "log_probs", 2, "int32", low=1),
         "input_lengths": _ix([4], "log_probs", 0, low=1, inclusive=True),
         "label_lengths": _ix([4], "labels", 1, low=1, inclusive=True)}),
    _op("cross_entropy", "paddle.nn.functional.cross_entropy", {"input": {"shape": [8, 10]}, "label": _ix([8, 1], "input", -1)}),
    _op("softmax_with_cross_entropy", "paddle.nn.functional.softmax_with_cross_entropy",
        {"logits": {"shape": [8, 10]}, "label": _ix([8, 1], "logits", -1)}),
    _op("nll_loss", "paddle.nn.functional.nll_loss", {"input": {"shape": [8, 10]}, "label": _ix([8], "input", 1)}),
    _op("dice_loss", "paddle.nn.functional.dice_loss", {"input": {"shape": [4, 6, 3]}, "label": _ix([4, 6, 1], "input", -1)}),
    _op("multi_margin_loss", "paddle.nn.functional.multi_margin_loss", {"input": {"shape": [8, 10]}, "label": _ix([8], "input", 1)}),
    _op("roi_align", "paddle.vision.ops.roi_align",
        {"x": {"shape": [2, 3, 20, 30]}, "boxes": {"shape": [7, 4], "values": {"boxes_in": "x"}},
         "boxes_num": {"shape": [2], "dtype": "int32", "values": {"sum_of": "boxes"}}}, attrs={"output_size": 3}),
    _op("roi_pool", "paddle.vision.ops.roi_pool",
        {"x": {"shape": [2, 3, 20, 30]}, "boxes": {"shape": [7, 4], "values": {"boxes_in": "x"}},
         "boxes_num": {"shape": [2], "dtype": "int32", "values": {"sum_of": "boxes"}}}, attrs={"output_size": 3}),
    _op("psroi_pool", "paddle.vision.ops.psroi_pool",
        {"x": {"shape": [2, 18, 20, 30]}, "boxes": {"shape": [7, 4], "values": {"boxes_in": "x"}},
         "boxes_num": {"shape": [2], "dtype": "int32", "values": {"sum_of": "boxes"}}}, attrs={"output_size": 3}),
] + [
    {"name": f"{cls.lower()}", "kind": "layer", "layer": f"paddle.nn.{cls}", "places": ["cpu"],
     "args": {"input_size": 8, "hidden_size": 8},
     "inputs": {"inputs": {"shape": [3, 12, 8]}, "sequence_length": _ix([3], "inputs", 1, low=1, inclusive=True)}}
    for cls in ("LSTM", "GRU", "SimpleRNN")
]  # fmt: skip

EXTREME_INTS = [0, -1, 10**6, 2**31 - 1]


def _data_inputs(case: dict) -> list[str]:
    """Inputs the table does not constrain (plain data)."""
    rules = indexed.rules_of(case.get("op") or case.get("layer") or "")
    return [n for n, t in case["inputs"].items() if n not in rules and "tensors" not in t]


def mutate(base: dict, rng: random.Random) -> tuple[str, dict]:
    """One hostile variant of `base`, and what was done."""
    case = copy.deepcopy(base)
    inputs = case["inputs"]
    kind = rng.choice(["range", "last", "ones", "scale", "dtype", "attr", "attr", "range"])
    if kind == "range" and _data_inputs(case):
        name = rng.choice(_data_inputs(case))
        low, high = rng.choice([(-1e30, 1e30), (-1e9, -1e8), (0, 1e-30), (1e8, 1e9), (-3e38, 3e38)])
        inputs[name].update(low=low, high=high)
        return f"range {name} [{low:g}, {high:g})", case
    if kind == "last":
        for spec in inputs.values():
            if isinstance(spec.get("index"), dict) and isinstance(spec["index"].get("dim"), int):
                target = inputs[spec["index"]["of"]].get("shape") or [1]
                spec["index"]["low"] = max(target[spec["index"]["dim"]] - 1, spec["index"].get("low", 0))
                return "index: the last value only", case
    if kind in ("ones", "scale"):
        factor = 1 if kind == "ones" else rng.choice([4, 16])
        for spec in inputs.values():
            if isinstance(spec.get("shape"), list):
                spec["shape"] = [1 if kind == "ones" else d * factor for d in spec["shape"]]
        return ("every dimension 1" if kind == "ones" else f"shapes x{factor}"), case
    if kind == "dtype":
        name = rng.choice(list(inputs))
        spec = inputs[name]
        if "tensors" in spec:
            return "unchanged", case
        ints = str(spec.get("dtype", "float32")).startswith("int")
        spec["dtype"] = rng.choice(
            ["int32", "int64", "int16", "uint8"] if ints else ["float16", "float64", "bfloat16"]
        )
        return f"dtype {name} {spec['dtype']}", case
    attrs = case.setdefault("attrs", {})
    ints = [k for k, v in attrs.items() if isinstance(v, int) and not isinstance(v, bool)]
    if ints:
        key, value = rng.choice(ints), rng.choice(EXTREME_INTS)
        attrs[key] = value
        return f"attr {key}={value}", case
    return "unchanged", case


def generate(seed: int, per_case: int) -> list[tuple[str, str, dict]]:
    """(base name, mutation, config) for every base case: `per_case` variants each."""
    rng = random.Random(seed)
    out = []
    for base in BASES:
        for i in range(per_case):
            what, case = mutate(base, rng)
            case["name"] = f"{base['name']}_m{i}"
            out.append((base["name"], what, case))
    return out


def validated(configs: list[tuple[str, str, dict]], workdir: Path, max_bytes: int):
    """(base, mutation, Case) of each config that passes validation with the framework's checks, and
    how many were refused."""
    checks = runners.config_checks()
    passed, refused = [], 0
    for base, what, case in configs:
        path = workdir / f"{case['name']}.yaml"
        path.write_text(yaml.safe_dump({"cases": [json.loads(json.dumps(case))]}, sort_keys=False))
        loaded = load_file(path, checks=checks, max_bytes=max_bytes)
        if loaded.issues or not loaded.cases:
            refused += 1
            continue
        passed.extend((base, what, c) for c in loaded.cases)
    return passed, refused


def classify(record: dict) -> str:
    message = str(record.get("message") or "")
    if record.get("status") == "ok":
        return "ok"
    if "died" in message or "signal" in message:
        return "death"
    if "no answer within" in message:
        return "hang"
    if "memory limit" in message:
        return "limit"
    return "error"


def run(cases, timeout_s: float, max_bytes: int, log=print) -> dict[str, list]:
    """Each case's quick trial in a confined worker; outcome -> [(base, mutation, case, message)]."""
    outcomes: dict[str, list] = {k: [] for k in ("ok", "error", "limit", "death", "hang")}
    settings = {"settings": {**measure_asdict(MeasureSettings.quick()), "probe": False}}
    worker = None
    try:
        for base, what, case in cases:
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.close()
                worker = Worker(memory_limit=worker_memory_limit(max_bytes), stderr=subprocess_devnull())
                worker.wait_ready()
            record = worker.request("time", case, settings, timeout_s=timeout_s)
            outcome = classify(record)
            outcomes[outcome].append((base, what, case.case_id, str(record.get("message") or "")[:200]))
            if outcome in ("death", "hang"):
                log(f"{outcome}: {case.case_id} ({base}; {what}): {record.get('message')}")
                worker.close()
                worker = None
    finally:
        if worker is not None:
            worker.close()
    return outcomes


def subprocess_devnull():
    import subprocess

    return subprocess.DEVNULL


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=44, help="seed of the mutations (default 44)")
    p.add_argument("--per-case", type=int, default=8, help="variants per base case (default 8)")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a trial may take before it is a hang (default 60)",
    )
    p.add_argument("--max-bytes", type=int, default=512 * 1024**2, help="the memory cap (default 512 MiB)")
    p.add_argument("--out", default=None, help="keep the configs here (default: a temporary directory)")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    workdir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fuzz-index-"))
    workdir.mkdir(parents=True, exist_ok=True)
    configs = generate(args.seed, args.per_case)
    cases, refused = validated(configs, workdir, args.max_bytes)
    outcomes = run(cases, args.timeout, args.max_bytes)
    covered = sorted({b for b, _, _ in configs})
    print(
        f"{len(covered)} ops and layers, {len(configs)} configs generated, {refused} refused by validate, "
        f"{len(cases)} items run: "
        + ", ".join(f"{k} {len(v)}" for k, v in outcomes.items())
        + f"; {time.monotonic() - t0:.0f} s; configs in {workdir}"
    )
    return 1 if outcomes["death"] or outcomes["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
