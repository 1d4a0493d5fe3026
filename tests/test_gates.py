"""configs/gates.yaml: schema, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.gate.settings import GateError, load_gates

PROJECT = Path(__file__).resolve().parents[1]


def test_shipped_gates_file_loads_and_overrides_apply():
    gates = load_gates(PROJECT / "configs" / "gates.yaml")
    op = gates.for_case("abs-1000x1000-fwd", "abs", "cpu")
    assert (op.metric, op.min_effect, op.higher_is_better) == ("time", 0.05, False)
    model = gates.for_case("lstm-train", "lstm", "gpu")
    assert (model.metric, model.min_effect, model.higher_is_better) == ("throughput", 0.08, True)


def test_first_matching_override_wins_and_place_filters(tmp_path):
    p = tmp_path / "gates.yaml"
    p.write_text(
        "defaults: {min_effect: 0.03}\n"
        "overrides:\n"
        "  - {match: 'abs*', place: 'gpu*', min_effect: 0.10}\n"
        "  - {match: 'abs*', metric: throughput}\n"
    )
    gates = load_gates(p)
    assert gates.for_case("abs-x", "abs", "gpu:0").min_effect == 0.10
    cpu = gates.for_case("abs-x", "abs", "cpu")
    assert (cpu.metric, cpu.min_effect, cpu.higher_is_better) == ("throughput", 0.03, True)
    assert gates.for_case("mul", "mul", "cpu").min_effect == 0.03


def test_missing_file_means_defaults(tmp_path):
    assert load_gates(tmp_path / "none.yaml").for_case("a").min_effect == 0.05


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("defaults: {min_effect: -1}\n", "'defaults.min_effect'"),
        ("defaults: {metric: speed}\n", "'defaults.metric': unknown metric 'speed'; known: time, throughput"),
        ("defaults: {metric: instructions}\n", "does not judge the time series; here: time, throughput"),
        ("overrides: [{match: a, metric: memory}]\n", "'overrides.0.metric': unknown metric 'memory'"),
        ("instructions: {min_effect: -1}\n", "'instructions.min_effect'"),
        ("instructions: {colour: red}\n", "'instructions.colour': unknown field"),
        ("throughput: {min_effect: 0.1}\n", "'throughput': unknown field"),
        ("metric_sections: {}\n", "metric_sections: unknown field"),
        ("overrides: [{match: a, colour: red}]\n", "'overrides.0.colour': unknown field"),
        ("defaults: [\n", "YAML error"),
        ("defaults: !!python/object/apply:os.system [ls]\n", "YAML error"),
    ],
)
def test_bad_gates_file_gets_one_clear_line(tmp_path, text, expected):
    p = tmp_path / "gates.yaml"
    p.write_text(text)
    with pytest.raises(GateError) as e:
        load_gates(p)
    assert str(p) in str(e.value) and expected in str(e.value)
    assert "\n" not in str(e.value)
