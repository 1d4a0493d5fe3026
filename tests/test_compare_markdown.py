"""`benchmark compare`'s Markdown: the two side medians and the paired B/A are labelled apart, and
the interval level names the cases the job split its error rate over (not the skipped ones)."""

from __future__ import annotations

import dataclasses

from benchmark.analysis import sequential as seq
from benchmark.compare import job as jobs
from benchmark.compare.render import interval_level, markdown
from benchmark.compare.sides import Side
from benchmark.config import load_paths
from benchmark.datamodel.result import ProcessValue

CONFIG = """
cases:
  - name: md_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [64, 64]}
    places: [cpu, gpu]
    modes: [dynamic]
"""


def _job(tmp_path) -> jobs.Job:
    path = tmp_path / "md.yaml"
    path.write_text(CONFIG)
    cases, issues = load_paths([path])
    assert not issues, issues
    states = [jobs.CaseState(case=c, min_effect=0.02) for c in cases]
    a = [100e-6, 104e-6, 99e-6, 101e-6, 103e-6, 98e-6]
    b = [97e-6, 99e-6, 100e-6, 96e-6, 102e-6, 95e-6]
    for s in states:
        if s.case.place == "gpu":
            s.skipped = "place gpu: this paddle build has no CUDA (CPU-only build)"
            continue
        for side, values in (("A", a), ("B", b)):
            s.entries[side] = [ProcessValue(index=i, pid=i, order=i, status="ok", value=v, samples=(v,))
                               for i, v in enumerate(values)]  # fmt: skip
        s.pairs = list(zip(a, b, strict=True))
        s.decision = seq.decide(a, b, min_effect=0.02, alpha=0.01, cases=1)
    sides = {k: Side(label=k, python=f"/venv-{k}/bin/python", env={}) for k in ("A", "B")}
    return jobs.Job(sides=sides, states=states, steps=6, alpha=0.01)


def test_the_side_medians_and_the_paired_ratio_are_labelled_apart(tmp_path):
    job = _job(tmp_path)
    md = markdown(job)
    assert "| verdict | case | place | A median | B median | B/A (paired) | interval | pairs |" in md
    assert "so it need not equal B divided by A" in md
    # one case measured, one skipped: the error rate was split over the measured one only
    assert interval_level(job) == "99% interval, adjusted for 1 measured case and repeated looks"


def test_no_advice_to_measure_over_ten_times_the_pairs(tmp_path):
    from benchmark.compare.render import inconclusive_words

    (state,) = [s for s in _job(tmp_path).states if s.decision is not None]
    d = state.decision
    near = inconclusive_words(dataclasses.replace(d, ratio=1.1, pairs=6, pairs_needed=20))
    far = inconclusive_words(dataclasses.replace(d, ratio=1.1, pairs=6, pairs_needed=2455))
    assert "about 14 more pairs would settle it" in near
    assert "far below this machine's noise" in far and "2449" not in far
