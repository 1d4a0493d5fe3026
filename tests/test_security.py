"""Configs are data: a hostile corpus, tried as a hostile contributor would, refused with one line each.

Every hostile case names a command that would create a sentinel file; after validation, and after
the resolvers themselves are asked directly (defense in depth: a stored or hand-built config never
passes through validation), the sentinel must not exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import runners
from benchmark.config import load_file
from benchmark.config.schema import NOT_CASE_FILES
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.reference import resolve_reference
from benchmark.runners.torch_runner import resolve_torch_name
from benchmark.sandbox import allowlist

PROJECT = Path(__file__).resolve().parents[1]

HOSTILE_OPS = [
    "paddle.utils.cpp_extension.extension_utils.run_cmd",
    "paddle.base.core.run_shell_command",
    "paddle.save",
    "paddle.load",
    "paddle.jit.save",
    "paddle.jit.to_static",
    "paddle.hub.load",
    "paddle.set_flags",
    "paddle.get_flags",
    "paddle.seed",
    "paddle.distributed.launch.main.launch",
    "paddle.distributed.spawn",
    "paddle.utils.download.get_weights_path_from_url",
    "paddle.utils.run_check",
    "paddle.vision.ops.read_file",
    "paddle.dataset.common.download",
    "paddle.static.load_program_state",
    "paddle.os.system",
    "paddle.tensor.math.os.system",
    "paddle.vision.nn.clip.dist.utils.subprocess.run",
    "paddle.nn.functional.os.popen",
    "paddle.Tensor.__class__",
    "paddle.abs.__globals__",
    "paddle.__builtins__",
    "paddle.abs.__call__",
    "paddle.\uff41bs",  # fullwidth 'a': a look-alike of paddle.abs
    "paddle.аbs",  # Cyrillic 'а'
    "paddle.abs ",
    " paddle.abs",
    "paddle. abs",
    "paddle.abs\n",
    "paddle.abs.",
    "paddle..abs",
    "paddle.abs_",  # in-place variant
    "paddle",
    "abs",
    "",
]
HOSTILE_REFERENCES = [
    "numpy.load",
    "numpy.save",
    "numpy.fromfile",
    "numpy.loadtxt",
    "numpy.genfromtxt",
    "numpy.lib.npyio.load",
    "numpy.testing.run_threaded",
    "numpy.f2py.run_main",
    "numpy.os.system",
    "numpy.__builtins__",
    "scipy.io.loadmat",
    "os.system",
    "builtins.eval",
    "subprocess.run",
    "torch.load",
    "torch.hub.load",
    "torch.utils.collect_env.run",
    "torch.os.system",
    "numpy.abs\n",
]
HOSTILE_TORCH_OPS = [
    "torch.utils.collect_env.run",
    "torch.hub.load",
    "torch.load",
    "torch.save",
    "torch.os.system",
    "torch.compile",
    "torch.jit.script",
    "torch.from_file",
    "torch.manual_seed",
    "torch.set_default_device",
    "torch.backends.cudnn.flags",
    "torch.abs.__self__",
    "torch.\uff41bs",
]


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "sentinel"
    yield path
    assert not path.exists(), "a hostile config executed something"


def _dump(case: dict) -> str:
    return yaml.safe_dump({"cases": [case]}, allow_unicode=True, sort_keys=False)


def _op_case(name: str, sentinel: Path) -> dict:
    return {
        "name": "abs_fast",
        "kind": "op",
        "places": ["cpu"],
        "op": name,
        "inputs": {},
        "attrs": {"command": f"touch {sentinel}", "cmd": f"touch {sentinel}"},
    }


def _program_case(name: str, sentinel: Path) -> dict:
    return {
        "name": "feed_abs_fetch",
        "kind": "program",
        "places": ["cpu"],
        "feed": {"x": {"shape": [4]}},
        "ops": [
            {"op": "paddle.abs", "inputs": ["x"], "out": "y"},
            {"op": name, "inputs": [], "attrs": {"command": f"touch {sentinel}"}, "out": "z"},
        ],
        "fetch": ["y"],
    }


def _op(**fields) -> dict:
    """A valid CPU op case (paddle.abs on 4 elements) with `fields` replacing or adding fields."""
    case = {
        "name": "abs",
        "kind": "op",
        "places": ["cpu"],
        "op": "paddle.abs",
        "inputs": {"x": {"shape": [4]}},
    }
    return {**case, **fields}


def _one_line_refusal(tmp_path: Path, text: str, field: str | None = None):
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_file(path, checks=runners.config_checks())
    assert not loaded.cases
    assert len(loaded.issues) == 1, [str(i) for i in loaded.issues]
    line = str(loaded.issues[0])
    assert "\n" not in line
    if field:
        assert f"field {field!r}" in line, line
    return line


@pytest.mark.parametrize("name", HOSTILE_OPS, ids=repr)
def test_hostile_op_names_are_refused_as_op_and_program_step(tmp_path, sentinel, name):
    _one_line_refusal(tmp_path, _dump(_op_case(name, sentinel)), "op")
    _one_line_refusal(tmp_path, _dump(_program_case(name, sentinel)), "ops.1.op")
    with pytest.raises(ValueError):
        resolve_op(name)


@pytest.mark.parametrize("name", HOSTILE_REFERENCES, ids=repr)
def test_hostile_references_are_refused(tmp_path, sentinel, name):
    _one_line_refusal(tmp_path, _dump(_op(reference=name)), "reference")
    with pytest.raises(ValueError):
        resolve_reference(name)


@pytest.mark.parametrize("name", HOSTILE_TORCH_OPS, ids=repr)
def test_hostile_torch_ops_are_refused(tmp_path, sentinel, name):
    _one_line_refusal(tmp_path, _dump(_op(torch_op=name)), "torch_op")
    with pytest.raises(ValueError):
        resolve_torch_name(sys.modules.get("torch"), name)


def test_refusal_says_why(tmp_path, sentinel):
    line = _one_line_refusal(tmp_path, _dump(_op_case("paddle.save", sentinel)))
    assert "not on the allowlist" in line and "configs/allowlist.yaml" in line
    line = _one_line_refusal(tmp_path, _dump(_op_case("paddle.abs_", sentinel)))
    assert "in-place" in line and "'paddle.abs'" in line
    line = _one_line_refusal(tmp_path, _dump(_op_case("paddle.ab", sentinel)))
    assert "did you mean 'paddle.abs'" in line
    line = _one_line_refusal(tmp_path, _dump(_op_case("paddle.\uff41bs", sentinel)))
    assert "not a plain dotted name" in line


YAML_TRICKS = {
    "anchor and alias smuggle an op": """\
        defaults: {op: &evil paddle.save}
        cases:
          - {name: a, kind: op, places: [cpu], op: *evil, inputs: {}}
        """,
    "merge key": """\
        cases:
          - <<: {op: paddle.save, kind: op}
            name: a
            places: [cpu]
            inputs: {}
        """,
    "alias bomb": "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    ),
    "python object tag": """\
        cases:
          - name: a
            kind: op
            op: paddle.abs
            inputs: {x: {shape: [4]}}
            attrs: {x: !!python/object/apply:os.system ["touch SENTINEL"]}
        """,
    "deep nesting": "cases: " + "[" * 2000 + "]" * 2000 + "\n",
}


@pytest.mark.parametrize("trick", sorted(YAML_TRICKS))
def test_yaml_tricks_are_refused_before_anything_is_built(tmp_path, sentinel, trick):
    text = textwrap.dedent(YAML_TRICKS[trick]).replace("SENTINEL", str(sentinel))
    line = _one_line_refusal(tmp_path, text)
    expected = {
        "anchor and alias smuggle an op": "anchors and aliases are not allowed",
        "merge key": "merge keys",
        "alias bomb": "anchors and aliases are not allowed",
        "python object tag": "YAML tag not allowed",
        "deep nesting": "nesting deeper than",
    }[trick]
    assert expected in line, line


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ("{name: '2024-01-01'}", None),  # a quoted string is plain data (and `name` takes a string)
        ("{when: 2024-01-01}", "date is not a plain value"),
        ("{blob: !!binary aGVsbG8=}", "bytes is not a plain value"),
        ("{s: !!set {a, b}}", "set is not a plain value"),
        ("{s: " + "x" * 300 + "}", "at most 256 characters"),
        ('{s: "a\\x07b"}', "printable string"),
        ("{__class__: 1}", "is not a plain name"),
        ("{axis: [" + ", ".join(["1"] * 10001) + "]}", "more than 10000 values"),
    ],
)
def test_attrs_are_plain_values(tmp_path, attrs, expected):
    text = f"""\
cases:
  - {{name: s, kind: op, places: [cpu], op: paddle.sum, inputs: {{x: {{shape: [4]}}}}, attrs: {attrs}}}
"""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    loaded = load_file(path, checks=runners.config_checks())
    plain = [str(i) for i in loaded.issues if "field 'attrs" in str(i) and "does not accept" not in str(i)]
    if expected is None:
        assert not plain
        return
    assert len(plain) == 1 and expected in plain[0], [str(i) for i in loaded.issues]


def test_attrs_are_bound_against_the_signature(tmp_path):
    text = _dump(_op(name="s", op="paddle.sum", attrs={"axsi": -1}))
    line = _one_line_refusal(tmp_path, text, "attrs.axsi")  # the bad key, as written
    assert "axsi" in line and "paddle.sum(x, axis" in line
    text = _dump(
        {
            "name": "p",
            "kind": "program",
            "places": ["cpu"],
            "feed": {"x": {"shape": [4]}},
            "ops": [{"op": "paddle.abs", "inputs": ["x", "x", "x"], "out": "y"}],
            "fetch": ["y"],
        }
    )
    line = _one_line_refusal(tmp_path, text, "ops.0.attrs")
    assert "too many positional arguments" in line


def test_oversized_grid_is_refused_before_expansion(tmp_path):
    grid = {f"p{i}": list(range(50)) for i in range(10)}
    text = _dump(_op(name="g", grid=grid))
    line = _one_line_refusal(tmp_path, text, "grid")
    assert "expands to 97656250000000000 cases" in line and "--max-cases" in line


def test_model_arguments_count_against_max_bytes(tmp_path):
    text = _dump(
        {"name": "m", "kind": "model", "places": ["cpu"], "model": "lstm", "args": {"hidden_size": 100000}}
    )
    line = _one_line_refusal(tmp_path, text, "args")
    assert "GiB" in line and "refused before allocating" in line
    text = _dump(
        {"name": "m", "kind": "model", "places": ["cpu"], "model": "lstm", "args": {"hiden_size": 8}}
    )
    assert "unknown argument 'hiden_size'" in _one_line_refusal(tmp_path, text, "args")


def test_a_grid_value_cannot_escape_the_trace_dir_through_the_case_id(tmp_path):
    text = _dump(_op(name="t", op="paddle.sum", attrs={"name": "$n"}, grid={"n": ["../../../x", "a/b c"]}))
    path = tmp_path / "c.yaml"
    path.write_text(text)
    loaded = load_file(path, checks=runners.config_checks())
    assert not loaded.issues, [str(i) for i in loaded.issues]
    ids = sorted(c.case_id for c in loaded.cases)
    assert ids == ["t-_.__.__._x", "t-a_bc"]
    for case_id in ids:
        assert "/" not in case_id and ".." not in case_id


@pytest.mark.parametrize("text", ["name: abs\n", "tags: [smoke]\n"])
def test_a_trailing_newline_does_not_pass_the_name_patterns(tmp_path, text):
    key, value = text.split(": ", 1)
    case = _op(**{key: "abs\n" if key == "name" else ["smoke\n"]})
    _one_line_refusal(tmp_path, _dump(case), key)


def test_the_suite_refuses_a_hostile_config_and_runs_nothing(tmp_path, sentinel):
    """End to end, as the pull-request job runs it: `pytest benchmark/` on a hostile config."""
    (tmp_path / "evil.yaml").write_text(
        _dump(_op_case("paddle.utils.cpp_extension.extension_utils.run_cmd", sentinel))
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benchmark/",
            "--bench-config",
            str(tmp_path),
            "--bench-no-store",
            "-q",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHMARK_DB_URL": f"sqlite:///{tmp_path / 'h.sqlite'}"},
        timeout=300,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error: nothing collected or run
    assert "not on the allowlist" in proc.stderr


# ------------------------------------------------------------------------------------------
# The allowlist itself, and a fuzz of the resolver
# ------------------------------------------------------------------------------------------


def test_every_allowlisted_op_resolves_to_a_function_in_the_installed_paddle():
    missing = []
    for name in sorted(allowlist.load_allowlist().names("op")):
        try:
            assert callable(resolve_op(name))
        except ValueError as e:
            missing.append(str(e))
    assert not missing, missing


def test_shipped_configs_use_only_allowlisted_names():
    for path in sorted((PROJECT / "configs").rglob("*.yaml")):
        if path.name in NOT_CASE_FILES:  # the gate settings, the allowlist and its index-input table
            continue
        loaded = load_file(path, checks=runners.config_checks())
        assert not loaded.issues, [str(i) for i in loaded.issues]


def _attribute_chains():
    """Dotted names built from attributes paddle really has, two or three levels deep: the re-export
    chains a hostile contributor would try (paddle.nn.functional.os.system and the like)."""
    import paddle

    first = sorted(n for n in dir(paddle) if not n.startswith("__"))
    second = sorted(
        {
            n
            for m in ("os", "nn", "utils", "tensor", "base", "vision", "jit", "io")
            for n in dir(getattr(paddle, m, object))
            if not n.startswith("__")
        }
    )
    third = [
        "system",
        "popen",
        "run",
        "Popen",
        "load",
        "save",
        "eval",
        "exec",
        "run_cmd",
        "abs",
        "sum",
        "softmax",
    ]
    segment = st.sampled_from(first + second + third + ["_", "__class__", "__globals__", "abs\n", "\uff41bs"])
    return st.lists(segment, min_size=1, max_size=4).map(lambda parts: "paddle." + ".".join(parts))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.one_of(
        _attribute_chains(), st.text(max_size=40), st.text(alphabet="paddle._nufctios\n ", max_size=40)
    )
)
def test_fuzz_only_allowlisted_names_resolve(name):
    admitted = name in allowlist.load_allowlist().names("op")
    try:
        fn = resolve_op(name)
    except ValueError:
        assert not admitted
        return
    assert admitted, f"{name!r} resolved without being on the allowlist"
    assert callable(fn) and not isinstance(fn, type)


# ------------------------------------------------------------------------------------------
# Pull requests: data only, or code
# ------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.mark.parametrize(
    "changed, scope",
    [
        ({"configs/ops/tanh.yaml": "cases: []\n"}, "data"),
        ({"configs/ops/tanh.yaml": "cases: []\n", "configs/models/m.yml": "cases: []\n"}, "data"),
        ({"configs/allowlist.yaml": "op: {}\n"}, "code"),
        ({"configs/ops/conftest.py": "import os\n"}, "code"),
        ({"configs/ops/tanh.yaml": "cases: []\n", "benchmark/x.py": "x = 1\n"}, "code"),
        ({".github/workflows/pr.yml": "on: push\n"}, "code"),
    ],
)
def test_pr_scope_tells_data_only_changes_from_code(tmp_path, changed, scope):
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "configs" / "gates.yaml").write_text("defaults: {}\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    for rel, text in changed.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "change")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmark.cli", "pr-scope", "--base", "HEAD~1", "--head", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == scope
    if scope == "code":
        assert "not case data:" in proc.stderr


def test_pr_scope_says_when_git_fails(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmark.cli", "pr-scope", "--base", "nope", "--head", "HEAD"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.startswith(
        "benchmark pr-scope: error: git diff nope...HEAD failed"
    )
