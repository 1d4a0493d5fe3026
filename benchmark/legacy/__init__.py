"""Convert PaddlePaddle benchmark API configs (``api/tests_v2/configs/*.json``) into YAML cases.

Pure: parsed JSON in, config dicts (and YAML text) out; `files.import_files` (behind `benchmark
import-legacy`) does the file I/O and hands in the resolver (`benchmark.runners.paddle_ops.resolve_op`:
only names on the operator allowlist resolve). Without a resolver only ops named in the alias table
convert, unchecked.

A legacy file is a JSON list of ``{"op", "param_info": {name: {"type", "dtype", "shape" | "value"}},
"atol"?, "repeat"?, "config_id"?}``. Conversion rules:

* the op becomes a paddle function through the reviewed alias table `benchmark.legacy.ops.OPS`
  (renamed ops and parameters, families of APIs, ops with no function to time), else generically:
  the first of ``paddle.nn.functional.<op>``, ``paddle.<op>``, ``paddle.linalg.<op>``,
  ``paddle.vision.ops.<op>`` that the allowlist admits;
* shapes are strings such as ``"[-1L, 128L, 8L]"`` (``L``: a Python 2 long); a ``-1`` in the first
  dimension is the batch dimension and becomes ``batch_size``; a ``-1`` anywhere else becomes
  ``unknown_dim`` (16, as the legacy harness's ``init_from_json`` did), with a note;
* ``type: Variable`` parameters are inputs; any other type is an attribute whose ``value`` string is
  parsed by its type (``int``/``int32``/``int64``/``long``, ``float``/``float32``/``float64``,
  ``bool`` as ``True``/``False``, ``string`` with ``None`` meaning "not set", ``list``/``tuple`` of
  numbers); an attribute that is ``None`` is left to the function's default; inputs and attributes
  are bound against the function's signature (`inspect.signature(fn).bind`), so a parameter the
  function does not take is reported, never passed;
* ``atol`` becomes the case's ``tolerance: {atol: ...}`` (the dtype's default rtol stays); a numpy
  ``reference`` is set where the table names one and the case's attributes are all ones the
  reference takes; ``repeat`` (a suggested iteration count) is kept in the ``description``: this
  harness calibrates its own rounds;
* ``float16`` cases get ``places: [gpu]`` only, with a note (the legacy harness disabled float16 on CPU);
* ``lstm`` becomes a ``model: lstm`` case when its arguments map onto the registered builder.

Every config that is not converted is reported with a reason category (`ops.REASONS`).
Cases are named ``<op>_legacy_<n>`` (``<op>_<api>_legacy_<n>`` for a family; ``n``: the config's
``config_id`` when they are unique in the file, else its index), tagged ``imported``.

Modules: this one (`convert`, the reports, the YAML text), `values` (shapes, typed values,
parameters), `cases` (the cases of one config), `ops` (the reviewed alias table), `files`
(`import_files`: the files of `benchmark import-legacy`, read, written and validated).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from benchmark.legacy import ops as T
from benchmark.legacy.cases import Resolver, lstm_case, op_cases
from benchmark.legacy.values import DEFAULT_BATCH_SIZE, DEFAULT_UNKNOWN_DIM, NotConvertible


@dataclass
class Report:
    """What happened to one legacy config: ``converted`` (with notes), or ``skipped`` with the reason."""

    source: str
    index: int
    op: str
    status: str  # "converted" | "skipped"
    message: str
    cases: list[str] = field(default_factory=list)
    reason: str | None = None  # the category of a skipped config

    def __str__(self) -> str:
        head = f"{self.source} #{self.index} ({self.op})"
        if self.status == "skipped":
            return f"{head}: not converted ({self.reason}): {self.message}"
        return f"{head}: {', '.join(self.cases)}" + (f" ({self.message})" if self.message else "")


@dataclass
class Conversion:
    """The cases converted from one legacy file and a report per config."""

    source: str
    cases: list[dict[str, Any]] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def skipped(self) -> list[Report]:
        return [r for r in self.reports if r.status == "skipped"]


def reason_counts(reports: Iterable[Report]) -> Counter[str]:
    """Configs per outcome: ``converted`` and one key per reason category."""
    return Counter("converted" if r.status == "converted" else (r.reason or T.VALUE) for r in reports)


def format_reason_table(counts: Counter[str]) -> str:
    """The closing table of `benchmark import-legacy`: configs per outcome, most frequent first."""
    total = sum(counts.values())
    width = max([len("outcome"), *map(len, counts)])
    lines = [f"{'outcome':<{width}}  configs  share"]
    for key, n in sorted(counts.items(), key=lambda kv: (kv[0] != "converted", -kv[1], kv[0])):
        lines.append(f"{key:<{width}}  {n:>7}  {100 * n / total:4.1f}%")
    lines.append(f"{'total':<{width}}  {total:>7}")
    return "\n".join(lines)


def convert_config(
    config: dict[str, Any],
    *,
    source: str,
    index: int,
    batch_size: int = DEFAULT_BATCH_SIZE,
    unknown_dim: int = DEFAULT_UNKNOWN_DIM,
    backward: bool = False,
    resolve: Resolver | None = None,
    label: int | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """One legacy config -> (case dicts, notes); raises NotConvertible with the reason."""
    if not isinstance(config, dict):
        raise NotConvertible(f"expected a JSON object, got {type(config).__name__}", T.MALFORMED)
    op = config.get("op")
    if not isinstance(op, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", op):
        raise NotConvertible(f"op {op!r}: expected the legacy op name", T.MALFORMED)
    if label is None:
        cid = config.get("config_id")
        label = cid if isinstance(cid, int) and not isinstance(cid, bool) else index
    if op == "lstm":
        return lstm_case(config, source, index, label, batch_size, unknown_dim)
    return op_cases(config, source, index, label, batch_size, unknown_dim, backward, resolve)


def _labels(configs: list[Any]) -> list[int]:
    ids = [c.get("config_id") if isinstance(c, dict) else None for c in configs]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and len(set(ids)) == len(ids):
        return ids  # type: ignore[return-value]
    return list(range(len(configs)))


def convert(
    configs: Any,
    *,
    source: str,
    batch_size: int = DEFAULT_BATCH_SIZE,
    unknown_dim: int = DEFAULT_UNKNOWN_DIM,
    backward: bool = False,
    resolve: Resolver | None = None,
) -> Conversion:
    """A parsed legacy file (a JSON list of configs) -> Conversion with the cases and one report per config."""
    if batch_size < 1 or unknown_dim < 1:
        raise ValueError(
            f"batch_size and unknown_dim: expected positive integers, got {batch_size}, {unknown_dim}"
        )
    result = Conversion(source)
    if isinstance(configs, dict):
        configs = [configs]
    if not isinstance(configs, list):
        result.reports.append(
            Report(source, 0, "?", "skipped", "expected a JSON list of configs", reason=T.MALFORMED)
        )
        return result
    for index, (config, label) in enumerate(zip(configs, _labels(configs), strict=True)):
        op = config.get("op", "?") if isinstance(config, dict) else "?"
        try:
            cases, notes = convert_config(
                config,
                source=source,
                index=index,
                batch_size=batch_size,
                unknown_dim=unknown_dim,
                backward=backward,
                resolve=resolve,
                label=label,
            )
        except NotConvertible as e:
            result.reports.append(Report(source, index, str(op), "skipped", str(e), reason=e.reason))
            continue
        result.cases.extend(cases)
        result.reports.append(
            Report(source, index, str(op), "converted", "; ".join(notes), [c["name"] for c in cases])
        )
    return result


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a shared object out in full each time: configs may not contain YAML anchors or aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(
    conversion: Conversion, reports: Iterable[Report] | None = None, snapshot: str | None = None
) -> str:
    """The YAML text of a converted file: a header naming the source (and the snapshot it came
    from, when given) and what was not converted."""
    where = f", {snapshot}" if snapshot else ""
    lines = [
        f"# Imported by `benchmark import-legacy` from {conversion.source} (PaddlePaddle benchmark API configs{where})."
    ]
    for r in reports if reports is not None else conversion.skipped:
        lines.append(f"# not converted: config #{r.index} ({r.reason}): {r.message}")
    body = yaml.dump(
        {"cases": conversion.cases},
        Dumper=_NoAliasDumper,
        sort_keys=False,
        default_flow_style=None,
        width=110,
    )
    return "\n".join(lines) + "\n" + body
