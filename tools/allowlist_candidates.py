"""Propose entries for `configs/allowlist.yaml` from the installed paddle, numpy, scipy and torch.

The committed allowlist is the authority: a name a config may use is admitted only when a reviewer
has put it there. This tool is the reviewer's starting point when a framework release adds
operators. It lists the public functions of the namespaces the policy allows (the tensor API, not
a walk of the package), drops names the policy never allows (I/O, processes, serialization,
compilation, flags, global state, in-place variants), and prints what the committed file lacks and
what it has that the installed packages do not:

    python tools/allowlist_candidates.py            # diff against configs/allowlist.yaml
    python tools/allowlist_candidates.py --write    # rewrite the file (review the diff before committing)
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import types
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.sandbox.allowlist import DEFAULT_PATH, FIELDS, load_allowlist  # noqa: E402

# Leaf names never proposed, whatever namespace exports them: I/O, processes, downloads,
# serialization, compilation, flags, global state, callables as arguments, printing.
DENY = re.compile(
    r"(^|_)(save|savez|load|loads|dump|dumps|seed|rng|flags?|printoptions|print|dlpack|file|files|"
    r"txt|regex|read|write|download|hub|jit|compile|compiled|script|trace|distributed|launch|spawn|"
    r"process|system|exec|eval|import|show|config|test|info|include|source|callback|hook|set|get|"
    r"setbufsize|getbufsize|seterr|geterr|seterrcall|geterrcall|manual|storage|mmap|memmap|device|"
    r"cuda|parameter|shard|frompyfunc|fromfunction|fromiter|nested|piecewise|apply|vectorize|vmap|"
    r"busday|datetime|export|cond|while|library|use|typename|deterministic|autocast|grad|"
    r"checkpoint|profiler|allocator|pin|share|async|quantize|quantized|sparse_coo|sparse_csr)($|_)"
)

PADDLE_NAMESPACES = [
    "paddle.nn.functional",
    "paddle.linalg",
    "paddle.fft",
    "paddle.signal",
    "paddle.sparse",
    "paddle.incubate.nn.functional",
    "paddle.vision.ops",
    "paddle.geometric",
]
# Reviewed one by one: tensor operators in namespaces that also hold datasets or classes, or whose
# name trips a pattern above (shard_index shards labels, not a process group).
PADDLE_REVIEWED = {
    "paddle": ["shard_index"],
    "paddle.text": ["viterbi_decode"],
    "paddle.metric": ["accuracy"],
}
# Operators paddle exports at the top level from outside paddle.tensor (reviewed by hand).
PADDLE_TOP_EXTRA = [
    "adaptive_avg_pool1d",
    "assign",
    "bernoulli",
    "cat",
    "clone",
    "concatenate",
    "conv1d",
    "conv2d",
    "conv3d",
    "crop",
    "ger",
    "group_norm",
    "layer_norm",
    "logspace",
    "pdist",
    "standard_gamma",
    "tril_indices",
    "triu_indices",
]
NUMPY_NAMESPACES = ["numpy.linalg", "numpy.fft"]
TORCH_NAMESPACES = ["torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"]


def _is_function(obj) -> bool:
    return callable(obj) and not isinstance(obj, (type, types.ModuleType))


# Substrings never proposed: file and text I/O, string rendering, backend-internal and quantization
# entry points.
DENY_SUBSTRINGS = (
    "file",
    "txt",
    "regex",
    "fromstring",
    "frombuffer",
    "from_numpy",
    "repr",
    "string",
    "format",
    "cudnn",
    "miopen",
    "mkldnn",
    "fbgemm",
    "vulkan",
    "hash",
    "quant",
    "qparams",
    "sym_constrain",
    "q_",
)


def _keep(name: str) -> bool:
    low = name.lower()
    return (
        not name.startswith("_")
        and not name.endswith("_")
        and not DENY.search(low)
        and not any(s in low for s in DENY_SUBSTRINGS)
    )


def _public_functions(module, names=None) -> list[str]:
    names = names if names is not None else getattr(module, "__all__", None) or dir(module)
    return sorted(n for n in set(names) if _keep(n) and _is_function(getattr(module, n, None)))


def paddle_candidates() -> dict[str, list[str]]:
    import paddle

    tensor = importlib.import_module("paddle.tensor")
    top = [n for n in dir(tensor) if hasattr(paddle, n) and _is_function(getattr(tensor, n, None))]
    top += [n for n in PADDLE_TOP_EXTRA if hasattr(paddle, n)]
    out = {"paddle": _public_functions(paddle, top)}
    for ns in PADDLE_NAMESPACES:
        out[ns] = _public_functions(importlib.import_module(ns))
    for ns, names in PADDLE_REVIEWED.items():
        module = importlib.import_module(ns)
        out[ns] = sorted(set(out.get(ns, [])) | {n for n in names if _is_function(getattr(module, n, None))})
    methods = set(getattr(tensor, "tensor_method_func", []))
    out["paddle.Tensor"] = sorted(
        n for n in methods & set(out["paddle"]) if _is_function(getattr(paddle.Tensor, n, None))
    )
    return out


def reference_candidates() -> dict[str, list[str]]:
    import numpy
    import scipy.special

    out = {"numpy": _public_functions(numpy)}
    for ns in NUMPY_NAMESPACES:
        out[ns] = _public_functions(importlib.import_module(ns))
    out["scipy.special"] = _public_functions(scipy.special)
    torch_ops = torch_candidates()
    if torch_ops:
        out.update(torch_ops)
    return out


def torch_candidates() -> dict[str, list[str]]:
    try:
        import torch
    except ImportError:
        return {}
    aten = [n for n in dir(torch._C._VariableFunctions) if hasattr(torch, n)]
    out = {"torch": _public_functions(torch, aten + list(torch.functional.__all__))}
    for ns in TORCH_NAMESPACES:
        out[ns] = _public_functions(importlib.import_module(ns))
    return out


HEADER = """\
# The operator allowlist: every name a config may call, deny by default. Reviewed like code.
#
# A case's `op` (and a program step's `op`) must be `<namespace>.<name>` for a name listed under
# `op`; its `reference` under `reference`; its `torch_op` under `torch_op`. Nothing else resolves,
# however public it is: configs are data, and a pull request's YAML must not be able to run code
# on the nightly GPU machine. What is never listed: I/O, processes, downloads, serialization,
# compilation, flags, distributed launch, framework or RNG state, in-place variants.
#
# To add operators after a framework release: `python tools/allowlist_candidates.py` shows what
# the installed packages offer that this file lacks; review each name, then add it here.
"""


def render(sections: dict[str, dict[str, list[str]]]) -> str:
    lines = [HEADER]
    for field in FIELDS:
        lines.append(f"{field}:")
        for ns in sorted(sections.get(field, {})):
            lines.append(f"  {ns}:")
            lines.extend(f"    - {n}" for n in sections[field][ns])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite configs/allowlist.yaml")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    proposed = {
        "op": paddle_candidates(),
        "reference": reference_candidates(),
        "torch_op": torch_candidates(),
    }
    if args.write:
        DEFAULT_PATH.write_text(render(proposed), encoding="utf-8")
        print(f"wrote {DEFAULT_PATH.relative_to(ROOT)}: review `git diff` before committing")
        return 0
    current = load_allowlist()
    for field in FIELDS:
        have = current.names(field)
        offered = {f"{ns}.{n}" for ns, names in proposed[field].items() for n in names}
        for name in sorted(offered - have):
            print(f"{field}: + {name}   (offered by the installed packages, not on the allowlist)")
        for name in sorted(have - offered):
            print(f"{field}: - {name}   (on the allowlist, not offered by the installed packages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
