"""A small fixed sample of the fuzz campaign of issue 44 (eval/fuzz_index_inputs.py): hostile
variants of the ops and layers with index-carrying inputs that pass `validate` kill and hang no
worker; the variants the campaign found killing one (sample_size -1 or 0, nshards 2^31 - 1) are
refused by `validate`. Real paddle on CPU, real confined workers."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest

EVAL = Path(__file__).resolve().parents[1] / "eval" / "fuzz_index_inputs.py"
_spec = importlib.util.spec_from_file_location("fuzz_index_inputs", EVAL)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)
MAX_BYTES = 512 * 1024**2


def _base(name: str) -> dict:
    return copy.deepcopy(next(b for b in fuzz.BASES if b["name"] == name))


def test_what_the_campaign_found_killing_a_worker_is_refused_by_validate(tmp_path):
    found = []
    for name, attr, value in [
        ("sample_neighbors", "sample_size", -1),  # SIGABRT
        ("weighted_sample_neighbors", "sample_size", 0),  # SIGSEGV
        ("shard_index", "nshards", 2**31 - 1),  # SIGFPE
    ]:
        case = _base(name)
        case["attrs"][attr] = value
        found.append((name, f"attr {attr}={value}", case))
    left_out = _base("sample_neighbors")  # its default, -1, aborts too
    del left_out["attrs"]["sample_size"]
    found.append(("sample_neighbors", "sample_size left out", left_out))
    passed, refused = fuzz.validated(found, tmp_path, MAX_BYTES)
    assert (passed, refused) == ([], 4)


@pytest.mark.slow
def test_a_fixed_sample_of_the_campaign_kills_and_hangs_no_worker(tmp_path):
    configs = fuzz.generate(seed=44, per_case=8)[::16]  # 20 of the 320, across the ops and layers
    cases, _ = fuzz.validated(configs, tmp_path, MAX_BYTES)
    assert len(cases) >= 15
    outcomes = fuzz.run(cases, timeout_s=120, max_bytes=MAX_BYTES, log=lambda line: None)
    assert outcomes["death"] == [] and outcomes["hang"] == []
    assert len(outcomes["ok"]) >= 10
