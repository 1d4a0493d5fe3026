"""The case-kind registry (benchmark.kinds) and the model-builder registry: every kind has every part,
and a new kind or model builder is one registration, read by the schema, the expansion, the runners'
dispatch, the counting pass and the pytest markers without another module changing."""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark import kinds, runners
from benchmark.config import load_file
from benchmark.config.schema import CaseSpec
from benchmark.kinds.base import Kind
from benchmark.runners.models import registry
from benchmark.runners.models.registry import Count, ModelArgs, ModelEntry

PROJECT = Path(__file__).resolve().parents[1]

NOOP = """
cases:
  - name: noop_abs
    kind: noop
    op: paddle.abs
    inputs: {x: {shape: [8, 8]}}
    places: [cpu]
    modes: [dynamic]
    backward: [false, true]
"""


def load(tmp_path: Path, text: str, **kw):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    loaded = load_file(path, checks=runners.config_checks(resolve=False), **kw)
    return [str(i) for i in loaded.issues], loaded.cases


@pytest.mark.parametrize("name", ["op", "layer", "program", "model"])
def test_every_registered_kind_has_every_part(name):
    kind = kinds.get(name)
    assert kind.name == name and kind.description
    fields = set(CaseSpec.model_fields)
    assert kind.required and set(kind.required) <= fields and set(kind.forbidden) <= fields
    runner = importlib.import_module(kind.runner)  # runner modules import the framework only when called
    assert callable(runner.prepare)
    assert kind.variant in ("backward", "step")
    assert kind.warmup_iterations >= 1 and kind.heavy_chunks >= 0
    for hook in (kind.check_names, kind.check_case, kind.build_seconds):
        assert callable(hook)
    assert kind.call is None or kind.call in kind.required


def test_the_counting_settings_are_the_kinds_own():
    # a layer is counted as an op is (its settings said, no longer the op's by default)
    assert {k: (kinds.get(k).warmup_iterations, kinds.get(k).heavy_chunks) for k in kinds.names()} == {
        "op": (50, 2),
        "layer": (50, 2),
        "program": (50, 2),
        "model": (2, 0),
    }
    assert [k for k in kinds.names() if kinds.get(k).heavy_probe] == ["model"]


def test_an_unknown_kind_is_refused_naming_the_known_ones(tmp_path):
    issues, cases = load(tmp_path, NOOP)
    assert not cases
    assert len(issues) == 1 and "noop_abs" in issues[0] and "kind" in issues[0], issues
    assert "unknown kind 'noop': expected one of layer, model, op, program" in issues[0]
    with pytest.raises(kinds.KindError, match="expected one of layer, model, op, program"):
        kinds.get("noop")


def test_a_kind_registered_elsewhere_validates_and_expands(tmp_path, monkeypatch):
    monkeypatch.setitem(kinds.KINDS, "noop", dataclasses.replace(kinds.get("op"), name="noop"))
    issues, cases = load(tmp_path, NOOP)
    assert not issues
    assert sorted(c.id for c in cases) == ["noop_abs-bwd-cpu-dynamic", "noop_abs-fwd-cpu-dynamic"]
    assert {c.kind for c in cases} == {"noop"}
    # its schema fields are the kind's: a field it forbids is refused
    issues, _ = load(tmp_path, NOOP.replace("    modes:", "    model: lstm\n    modes:"))
    assert len(issues) == 1 and "field 'model' does not apply to kind 'noop'" in issues[0], issues


def test_a_kind_with_its_own_hooks(tmp_path, monkeypatch):
    """A kind's own name check, case check and variant, with no other module told about it."""

    def names(spec, checks):
        return (("op",), "noop refuses paddle.exp") if spec.op == "paddle.exp" else None

    def case(cfg, checks, sizes):
        big = sizes.tensor_bytes(cfg["inputs"]) > 1024
        return (
            [("inputs", f"noop takes {sizes.tensor_dtypes(cfg['inputs'])} of at most 1 KiB")] if big else []
        )

    noop = Kind(
        name="noop",
        description="a throw-away kind",
        required=("op", "inputs"),
        forbidden=("feed", "ops", "fetch", "model", "layer"),
        runner="benchmark.runners.paddle_ops",
        variant="step",
        steps=("train", "infer"),
        check_names=names,
        check_case=case,
    )
    monkeypatch.setitem(kinds.KINDS, "noop", noop)
    text = NOOP.replace("    backward: [false, true]\n", "")
    issues, cases = load(tmp_path, text)
    assert not issues and sorted(c.id for c in cases) == [
        "noop_abs-infer-cpu-dynamic",
        "noop_abs-train-cpu-dynamic",
    ]
    issues, _ = load(tmp_path, text.replace("paddle.abs", "paddle.exp"))
    assert len(issues) == 1 and "noop refuses paddle.exp" in issues[0] and "field 'op'" in issues[0], issues
    issues, _ = load(tmp_path, text.replace("[8, 8]", "[64, 64]"))
    assert len(issues) == 1 and "noop takes ['float32'] of at most 1 KiB" in issues[0], issues


@pytest.mark.slow
def test_a_kind_registered_by_a_plugin_is_selected_by_its_marker(tmp_path):
    """A pytest plugin (its own module, nothing else changed) registers `noop`: its cases are
    collected with the marker `noop`, and `-m op` leaves them out."""
    (tmp_path / "noop_kind.py").write_text(
        "import dataclasses\nfrom benchmark import kinds\n"
        "kinds.register(dataclasses.replace(kinds.get('op'), name='noop', description='a throw-away kind'))\n"
    )
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(NOOP))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))

    def collect(*args: str) -> str:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "noop_kind",
            "benchmark/test_cases.py",
        ]
        cmd += ["--collect-only", "-q", "--bench-config", str(cfg), *args]
        proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: nothing selected
        return proc.stdout

    out = collect("-m", "noop")
    assert "test_case[noop_abs-fwd-cpu-dynamic]" in out and "2/2 tests collected" not in out, out
    assert "2 tests collected" in out, out
    assert "noop_abs" not in collect("-m", "op")
    assert "noop: a throw-away kind" in collect("--markers")


class TinyArgs(ModelArgs):
    width: Count = 3


def _tiny_entry(params: int) -> ModelEntry:
    def build(a):
        raise AssertionError("validation never builds")

    return ModelEntry("tiny_test_model", "test", TinyArgs, lambda a: (params, 0), build)


MODEL = """
cases:
  - name: tiny
    kind: model
    model: {model}
    args: {{width: 5}}
    places: [cpu]
    step: train
"""


def test_a_model_builder_registered_elsewhere_is_validated_by_name(tmp_path, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "tiny_test_model", _tiny_entry(params=10))
    issues, cases = load(tmp_path, MODEL.format(model="tiny_test_model"))
    assert not issues and [c.id for c in cases] == ["tiny-train-cpu-dynamic"]
    # its arguments are its own ModelArgs'
    issues, _ = load(tmp_path, MODEL.format(model="tiny_test_model").replace("width", "depth"))
    assert len(issues) == 1 and "unknown argument 'depth'" in issues[0], issues
    # the memory estimate is the entry's (4 floats a parameter: weights, gradients, two moments)
    monkeypatch.setitem(registry.REGISTRY, "tiny_test_model", _tiny_entry(params=2**31))
    issues, _ = load(tmp_path, MODEL.format(model="tiny_test_model"), max_bytes=2**33)
    assert len(issues) == 1 and "the model needs about 32.0 GiB" in issues[0], issues


def test_an_unknown_model_is_refused_at_validation_and_at_build_time(tmp_path):
    issues, cases = load(tmp_path, MODEL.format(model="no_such_model"))
    assert not cases and len(issues) == 1, issues
    (issue,) = issues
    assert issue.startswith(str(tmp_path / "c.yaml")) and "tiny" in issue and "field 'model'" in issue, issue
    assert "unknown model 'no_such_model': expected one of the registered builders (" in issue
    assert all(name in issue for name in registry.model_names())
    with pytest.raises(ValueError, match="unknown model 'no_such_model': expected one of the registered"):
        registry.resolve("no_such_model", {})
