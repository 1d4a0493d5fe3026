"""The model-builder registry (issue 48): every registered model builds and trains at its small size
on CPU with paddle, its loss after K steps repeats exactly, its memory estimate's parameter count is
near the real one, and hostile model configs are refused by `benchmark validate` before paddle is
imported."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark.config import load_file
from benchmark.runners import models
from benchmark.runners.models import registry

PROJECT = Path(__file__).resolve().parents[1]


def _case(tmp_path, name: str, mode: str = "dynamic", step: str = "train", args: str = "{}"):
    path = tmp_path / f"{name}-{mode}.yaml"
    path.write_text(
        f"cases:\n  - {{name: {name}, kind: model, model: {name}, args: {args}, step: {step}, "
        f"places: [cpu], modes: [{mode}]}}\n"
    )
    loaded = load_file(path, models=models.model_names(), checks=None)
    assert not loaded.issues, loaded.issues
    (case,) = loaded.cases
    return case


def test_the_registry_imports_no_framework_and_lists_the_model_ci_models():
    probe = textwrap.dedent(
        """
        import sys
        from benchmark.runners.models import registry
        print(registry.model_names())
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("paddle", "torch")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    names, imported = proc.stdout.strip().splitlines()[-2:]
    assert imported == "[]", f"importing the registry imported {imported}"
    for name in ("lstm_lm", "seq2seq", "resnet50", "mobilenet_v1", "bert", "transformer", "yolov3"):
        assert repr(name) in names
    for name in ("deeplabv3", "tsm", "cyclegan", "ocr_rec"):
        assert repr(name) in names


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"hidden_size": "64"}, "hidden_size = '64'"),
        ({"hidden_size": True}, "hidden_size = True"),
        ({"hidden_size": 0}, "greater than or equal to 1"),
        ({"vocab_file": "data/vocab.txt"}, "unknown argument 'vocab_file'"),
        ({"amp": "O3"}, "amp = 'O3'"),
        ({"builder": "paddle.vision.models.resnet50"}, "unknown argument 'builder'"),
    ],
)
def test_arguments_are_checked_by_the_schema(args, expected):
    reason, need = models.check_args("bert", args)
    assert reason is not None and expected in reason and reason.startswith("model 'bert': args: ")
    assert need == 0


def test_an_unknown_model_is_refused_by_name_not_built_as_another():
    reason, _ = models.check_args("alexnet", {})
    assert reason is not None and reason.startswith("unknown model 'alexnet'")
    with pytest.raises(ValueError, match="unknown model 'alexnet'"):
        models.build("alexnet", {})


def test_estimates_grow_with_their_arguments():
    _, small = models.check_args("resnet50", {})
    _, big = models.check_args("resnet50", {"batch_size": 32, "image_size": 224, "width": 64})
    _, amp = models.check_args("resnet50", {"batch_size": 32, "image_size": 224, "width": 64, "amp": "O2"})
    assert small < amp < big


HOSTILE = {
    "unknown builder": ("{model: alexnet}", "model", "unknown model 'alexnet'"),
    "function path": ("{model: os.system}", "model", "expected the name of a registered model builder"),
    "module path": ("{model: paddle.vision.models.resnet50}", "model", "registered model builder"),
    "file path in an argument": (
        "{model: bert, args: {vocab_size: /etc/passwd}}",
        "args",
        "vocab_size = '/etc/passwd'",
    ),
    "file argument": (
        "{model: ocr_rec, args: {dict_path: ppocr_keys.txt}}",
        "args",
        "unknown argument 'dict_path'",
    ),
    "estimate over the cap": (
        "{model: resnet50, args: {batch_size: 4096, image_size: 512, width: 64}}",
        "args",
        "more than the 8.0 GiB allowed",
    ),
}


def test_hostile_model_configs_are_refused_by_validate_before_paddle_is_imported(tmp_path):
    paths = {}
    for i, (label, (body, _, _)) in enumerate(HOSTILE.items()):
        path = tmp_path / f"hostile{i}.yaml"
        path.write_text(f"cases:\n  - {{name: m{i}, kind: model, places: [cpu], {body[1:-1]}}}\n")
        paths[label] = path
    probe = textwrap.dedent(
        f"""
        import sys
        from benchmark.cli import main
        for path in {[str(p) for p in paths.values()]!r}:
            print("exit", main(["validate", path]))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("paddle", "torch")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "[]", f"validating hostile model configs imported {lines[-1][:200]}"
    for (label, (_, field, expected)), path in zip(HOSTILE.items(), paths.values(), strict=True):
        problem = next(line for line in lines if line.startswith(str(path)))
        assert f"case 'm{list(HOSTILE).index(label)}'" in problem and f"field {field!r}" in problem, problem
        assert expected in problem, (label, problem)
    assert lines.count("exit 2") == len(HOSTILE)


def test_the_shipped_model_configs_validate():
    from benchmark.config import load_paths

    cases, issues = load_paths([PROJECT / "configs" / "models"], models=models.model_names(), checks=None)
    assert not issues, issues
    names = {c.name for c in cases}
    # every model CI case has its PB-sized twin
    small = {c.name for c in cases if "model_ci" in c.tags}
    assert {n + "_pb" for n in small} <= names
    assert {c.name for c in cases if "model_ci" in c.tags} >= {"seq2seq", "lstm_lm", "resnet50", "bert"}


# Every registered model but resnet18 (224x224 images: its config is tagged slow), trained at its
# small size: about 0.1-2 s each on the 2-core machine.
SMALL = [n for n in registry.model_names() if n != "resnet18"]


@pytest.mark.parametrize("name", SMALL)
def test_each_model_trains_at_its_small_size_and_its_loss_repeats(tmp_path, name):
    case = _case(tmp_path, name)
    first = models.prepare(case)
    loss = first.info["loss"]
    assert loss["step"] == models.LOSS_STEPS and len(loss["losses"]) == models.LOSS_STEPS
    assert all(math.isfinite(x) for x in loss["losses"])
    assert first.info["first_step_s"] > 0 and first.info["steady_step_s"] > 0
    assert first.items_per_step == first.info["items_per_step"] > 0
    first.step()
    peak = first.peak_memory()
    assert peak is not None and peak > 50 * 1024**2  # the worker's resident set, paddle included
    again = models.prepare(case)
    assert again.info["loss"]["losses"] == loss["losses"]  # same seed, same batch: bit for bit
    entry, full = registry.resolve(name, {})
    params, _ = entry.estimate(full)
    assert 0.5 <= params / first.info["parameters"] <= 2.0, (params, first.info["parameters"])


@pytest.mark.parametrize("name", ["seq2seq", "lstm_lm", "bert"])
def test_to_static_gives_the_dynamic_loss_and_records_its_first_step(tmp_path, name):
    dynamic = models.prepare(_case(tmp_path, name))
    static = models.prepare(_case(tmp_path, name, mode="to_static"))
    assert static.info["loss"]["losses"] == pytest.approx(dynamic.info["loss"]["losses"], rel=1e-5)
    assert static.info["compile_s"] >= 0 and static.info["first_step_s"] >= static.info["steady_step_s"] * 0.5


def test_an_inference_step_records_the_loss_of_one_forward(tmp_path):
    prepared = models.prepare(_case(tmp_path, "lstm_lm", step="infer"))
    assert prepared.info["loss"]["step"] == 0 and len(prepared.info["loss"]["losses"]) == 1
    assert math.isfinite(prepared.info["loss"]["value"])
    first, second = prepared.outputs()["out"], prepared.outputs()["out"]
    assert first.shape == (4, 10, 200)  # batch, steps, vocabulary: the step returns the network's output
    assert (first == second).all()  # no training: the same forward


def test_amp_is_refused_on_cpu_with_a_reason(tmp_path):
    from benchmark.runners.base import RunnerUnavailable

    with pytest.raises(RunnerUnavailable, match="AMP O2 runs on a GPU place only"):
        models.prepare(_case(tmp_path, "resnet50", args="{amp: O2}"))


def test_the_profile_pass_splits_a_training_step_into_its_phases(tmp_path):
    from benchmark.runners import profile_pass
    from benchmark.runners.profile_tables import format_phases

    case = _case(tmp_path, "seq2seq")
    record = profile_pass(case, models.prepare(case), steps=3)
    phases = record["phases"]
    assert list(phases) == ["forward", "backward", "optimizer"] and all(v > 0 for v in phases.values())
    # (how the phases' times add up against the step's is the machine's to decide, not asserted)
    assert record["step_ns"] and all(ns > 0 for ns in record["step_ns"])
    line = format_phases(phases, {k: v / 2 for k, v in phases.items()})
    assert line.startswith("phases per step: forward ") and "x2.00" in line
    infer = _case(tmp_path, "lstm_lm", step="infer")
    assert "phases" not in profile_pass(infer, models.prepare(infer), steps=2)
