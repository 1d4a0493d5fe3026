"""Reference checks: dtype-aware tolerances and the comparison of framework outputs with a reference.

Pure numpy (no framework import): `benchmark.runners.reference` computes the reference outputs and
gradients; this module decides whether two sets of arrays agree and says how far apart they are.

The criterion is element by element, in float64::

    |actual - expected| <= atol + rtol * scale

where ``scale`` is, by default (``relative_to="max"``), the largest finite magnitude of the expected
output (a norm-wise relative error, as in numerical linear algebra), or ``|expected|`` of the element
itself with ``relative_to="element"`` (numpy's ``allclose``). The norm-wise form is the default because
reductions legitimately lose the low bits of results that cancel to near zero: a float32 sum over
1089 values in [-1, 1] differs from the float64 sum by ~1e-4 absolute whatever its value, so an
element-wise relative test fails on correct kernels (it did, on paddle.sum and on the broadcast
gradient of paddle.multiply). Non-finite values are handled explicitly: a NaN must be a NaN on both sides,
an infinity must be the same infinity on both sides, and a non-finite value where the other side is
finite is a mismatch (counted, never silently compared as a number).

Default tolerances by the dtype of the case (see `DEFAULT_TOLERANCES`; a case's ``tolerance:``
mapping overrides either value):

========  =======  =======  ====================================================================
dtype     rtol     atol     why
========  =======  =======  ====================================================================
float16   1e-2     1e-3     10 mantissa bits (eps 9.8e-4): one rounding of the output is 4.9e-4
bfloat16  2e-2     1e-2     7 mantissa bits (eps 7.8e-3): the output rounding alone is 3.9e-3
float32   1e-5     1e-6     eps 1.2e-7; leaves room for a different summation order in reductions
float64   1e-10    1e-12    eps 2.2e-16; still allows reassociation in long reductions
integers  0        0        exact
bool      0        0        exact
========  =======  =======  ====================================================================

The reference is computed in float64 from the same inputs (see `benchmark.runners.reference`), so the
measured error is the framework's own, not the sum of two implementations' errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

# dtype -> (rtol, atol). Documented in the module docstring; keep the two in step.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
}
_EXACT = (0.0, 0.0)


def tolerance_for(dtype: str, override: Mapping[str, float] | None = None) -> tuple[float, float]:
    """(rtol, atol) for outputs of `dtype`, with a case's ``tolerance`` mapping applied on top.

    `override` may give ``rtol``, ``atol`` or both; any other key is an error (a typo such as
    ``atl`` must not silently leave the default in force).
    """
    rtol, atol = DEFAULT_TOLERANCES.get(str(dtype), _EXACT)
    if override:
        unknown = set(override) - {"rtol", "atol"}
        if unknown:
            raise ValueError(f"tolerance: unknown key(s) {sorted(unknown)}; expected 'rtol' and/or 'atol'")
        for key, value in override.items():
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or value < 0
                or not np.isfinite(value)
            ):
                raise ValueError(f"tolerance.{key}: expected a non-negative number, got {value!r}")
        rtol = float(override.get("rtol", rtol))
        atol = float(override.get("atol", atol))
    return rtol, atol


def _as_float64(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype == np.bool_:
        return arr.astype(np.float64)
    return arr.astype(np.float64, copy=False) if arr.dtype != np.float64 else arr


def _nonfinite_mismatch(act: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """Positions where the non-finite pattern differs (NaN vs not NaN, or different/missing infinity)."""
    nan_a, nan_e = np.isnan(act), np.isnan(exp)
    inf_a, inf_e = np.isinf(act), np.isinf(exp)
    bad = nan_a != nan_e
    bad |= inf_a != inf_e
    both_inf = inf_a & inf_e
    bad |= both_inf & (np.sign(act) != np.sign(exp))
    return bad


RELATIVE_TO = ("max", "element")


def compare_array(
    actual: Any, expected: Any, *, rtol: float, atol: float, relative_to: str = "max"
) -> dict[str, Any]:
    """Compare one output: shape, max absolute and relative error, mismatches, pass/fail.

    ``max_rel_err`` is the element-wise relative error (|a - e| / |e| where e != 0), for information;
    ``max_scaled_err`` is max |a - e| / scale, the quantity the rtol test bounds.
    """
    if relative_to not in RELATIVE_TO:
        raise ValueError(f"relative_to: expected one of {RELATIVE_TO}, got {relative_to!r}")
    act, exp = _as_float64(actual), _as_float64(expected)
    row: dict[str, Any] = {
        "shape": list(act.shape),
        "expected_shape": list(exp.shape),
        "shape_match": act.shape == exp.shape,
        "max_abs_err": None,
        "max_rel_err": None,
        "mismatched": None,
        "nonfinite_mismatched": None,
        "size": int(exp.size),
        "passed": False,
    }
    if not row["shape_match"]:
        return row
    nonfinite_bad = _nonfinite_mismatch(act, exp)
    finite = np.isfinite(act) & np.isfinite(exp)
    err = np.subtract(act, exp, where=finite, out=np.zeros_like(exp))
    err = np.abs(err, out=err)
    mag = np.abs(exp, where=finite, out=np.zeros_like(exp))
    rel = np.divide(err, mag, where=finite & (mag > 0), out=np.zeros_like(exp))
    scale = float(mag.max()) if mag.size else 0.0
    allowed = atol + rtol * (mag if relative_to == "element" else scale)
    over = finite & (err > allowed)
    row["max_abs_err"] = float(err.max()) if err.size else 0.0
    row["max_rel_err"] = float(rel.max()) if rel.size else 0.0
    row["scale"] = scale
    row["max_scaled_err"] = row["max_abs_err"] / scale if scale > 0 else None
    row["mismatched"] = int(over.sum())
    row["nonfinite_mismatched"] = int(nonfinite_bad.sum())
    row["passed"] = row["mismatched"] == 0 and row["nonfinite_mismatched"] == 0
    if not row["passed"]:
        score = np.where(nonfinite_bad, np.inf, np.where(over, err - allowed, -np.inf))
        worst = np.unravel_index(int(np.argmax(score)), exp.shape) if exp.ndim else ()
        row["worst_index"] = [int(i) for i in worst]
        row["worst_actual"] = float(act[worst])
        row["worst_expected"] = float(exp[worst])
    return row


def _describe_failure(name: str, row: dict[str, Any], rtol: float, atol: float) -> str:
    if row.get("missing"):
        return f"{name}: missing from the framework's outputs"
    if not row["shape_match"]:
        return f"{name}: shape {row['shape']} != reference shape {row['expected_shape']}"
    parts = []
    if row["mismatched"]:
        parts.append(
            f"{row['mismatched']}/{row['size']} elements beyond rtol={rtol:g} atol={atol:g} (scale {row['scale']:.3g})"
        )
    if row["nonfinite_mismatched"]:
        parts.append(f"{row['nonfinite_mismatched']} NaN/inf where the reference differs")
    where = tuple(row.get("worst_index", ()))
    return (
        f"{name}: {', '.join(parts)}; max abs err {row['max_abs_err']:.3g}, max rel err {row['max_rel_err']:.3g}; "
        f"worst at {where}: {row['worst_actual']:.6g} vs reference {row['worst_expected']:.6g}"
    )


def compare_outputs(
    actual: Mapping[str, Any],
    expected: Mapping[str, Any],
    *,
    rtol: float,
    atol: float,
    relative_to: str = "max",
) -> dict[str, Any]:
    """Compare every output named in `expected` with the same name in `actual`.

    Returns ``{"passed", "message", "rtol", "atol", "max_abs_err", "max_rel_err", "outputs": {name:
    {"shape_match", "max_abs_err", "max_rel_err", "mismatched", "nonfinite_mismatched", "passed", ...}}}``.
    Outputs present only in `actual` are not compared (e.g. gradients without a reference). An output
    missing from `actual` fails. `relative_to` chooses the scale of the rtol term (module docstring).
    """
    outputs: dict[str, dict[str, Any]] = {}
    for name, exp in expected.items():
        if name not in actual:
            outputs[name] = {
                "missing": True,
                "passed": False,
                "shape_match": False,
                "max_abs_err": None,
                "max_rel_err": None,
            }
            continue
        outputs[name] = compare_array(actual[name], exp, rtol=rtol, atol=atol, relative_to=relative_to)
    passed = bool(outputs) and all(r["passed"] for r in outputs.values())

    def worst(key: str) -> float | None:
        values = [r[key] for r in outputs.values() if r.get(key) is not None]
        return max(values) if values else None

    result = {
        "passed": passed,
        "rtol": rtol,
        "atol": atol,
        "relative_to": relative_to,
        "max_abs_err": worst("max_abs_err"),
        "max_rel_err": worst("max_rel_err"),
        "max_scaled_err": worst("max_scaled_err"),
        "outputs": outputs,
    }
    if not outputs:
        result["message"] = "nothing to compare: the reference produced no outputs"
    elif passed:
        scaled = result["max_scaled_err"]
        result["message"] = (
            f"ok: {', '.join(outputs)} within rtol={rtol:g} atol={atol:g} (max abs err {result['max_abs_err']:.3g}"
            + (f", max err/scale {scaled:.3g}" if scaled is not None else "")
            + f"; element-wise rel err up to {result['max_rel_err']:.3g})"
        )
    else:
        failing = [n for n, r in outputs.items() if not r["passed"]]
        first = _describe_failure(failing[0], outputs[failing[0]], rtol, atol)
        more = (
            f" (and {len(failing) - 1} more output(s) failing: {', '.join(failing[1:])})"
            if len(failing) > 1
            else ""
        )
        result["message"] = f"mismatch: {first}{more}"
    return result
