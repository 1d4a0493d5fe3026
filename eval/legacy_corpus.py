"""Measure `benchmark import-legacy` on PaddlePaddle/benchmark's operator corpus.

    python eval/legacy_corpus.py CORPUS_DIR [--batch-size 16] [--max-run-bytes 2GiB] [--json OUT] [--keep]

CORPUS_DIR holds the legacy JSON configs (``api/tests_v2/configs/*.json`` of a checkout or
snapshot of PaddlePaddle/benchmark, kept outside this repository). For every config it reports:

1. **converted and valid**: the converter produced its cases and every case passes the checks of
   `benchmark validate` (allowlist, signature binding, shapes, memory ceiling);
2. **ran on CPU**: every CPU case of the config (forward, dynamic mode) was prepared and ran one
   iteration without error, and every case that names a reference passed its accuracy check
   (a config whose cases name no reference counts when it runs; both figures are printed).

Configs whose inputs are float16 are GPU-only (the legacy harness disabled float16 on CPU), as are
ops whose kernel paddle registers for GPU only (fused RoPE, sync batch norm); they count as not run
here, as do cases whose inputs exceed ``--max-run-bytes`` (this 2-core machine is
shared). Cases run in a child process, so a crash of the framework is recorded against the case
that caused it and the run goes on. A measurement script, not a test: the figures depend on the
corpus snapshot, the paddle build and the allowlist.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _size(text: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


# ------------------------------------------------------------------------------------------
# Child: run cases one by one, one JSON line each
# ------------------------------------------------------------------------------------------


def run_child(yaml_dir: str, ids: list[str], out: str) -> None:
    from benchmark import runners
    from benchmark.config import load_paths
    from benchmark.runners.reference import check_accuracy

    cases, _ = load_paths([yaml_dir], checks=runners.config_checks())
    by_id = {c.id: c for c in cases}
    with open(out, "a", encoding="utf-8") as f:
        for cid in ids:
            case = by_id[cid]
            f.write(json.dumps({"id": cid, "status": "started"}) + "\n")
            f.flush()
            row: dict = {"id": cid}
            prepared = None
            try:
                prepared = runners.prepare(case)
                prepared.step()
                prepared.sync()
                record = check_accuracy(case, prepared)
                if record is None:
                    row["status"] = "ran"
                else:
                    row["status"] = f"reference {record['status']}"
                    row["message"] = str(record.get("message", ""))[:300]
            except Exception as e:  # noqa: BLE001 - every failure is a measured outcome
                row["status"] = "error"
                row["message"] = (
                    f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
                )
            finally:
                if prepared is not None:
                    with contextlib.suppress(Exception):
                        prepared.close()
            f.write(json.dumps(row) + "\n")
            f.flush()


def run_cases(yaml_dir: Path, ids: list[str], workdir: Path, timeout: float) -> dict[str, dict]:
    """Run `ids` in child processes; a child that dies marks the case it was on as crashed."""
    results: dict[str, dict] = {}
    pending = list(ids)
    log = workdir / "run.jsonl"
    while pending:
        log.write_text("")
        ids_file = workdir / "ids.json"
        ids_file.write_text(json.dumps(pending))
        cmd = [sys.executable, __file__, "--child", str(yaml_dir), str(ids_file), str(log)]
        try:
            proc = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        started = None
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if row["status"] == "started":
                started = row["id"]
            else:
                results[row["id"]] = row
                started = None
        done = [i for i in pending if i in results]
        if started is not None:
            results[started] = {"id": started, "status": "error", "message": f"the process died ({code})"}
            done.append(started)
        elif not done and code != 0:
            for i in pending:
                results[i] = {"id": i, "status": "error", "message": f"the runner did not start ({code})"}
            break
        pending = [i for i in pending if i not in results]
        if pending:
            print(f"  restarting after {len(results)} case(s) ({code})", file=sys.stderr)
    return results


# ------------------------------------------------------------------------------------------
# Parent
# ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        run_child(argv[1], json.loads(Path(argv[2]).read_text()), argv[3])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", help="directory of legacy JSON configs (api/tests_v2/configs)")
    p.add_argument("--batch-size", type=int, default=16, help="-1 batch dimension (default 16, as legacy)")
    p.add_argument(
        "--max-run-bytes",
        type=_size,
        default=_size("2GiB"),
        help="skip the run check of cases whose inputs are larger (default 2GiB)",
    )
    p.add_argument("--timeout", type=float, default=3600, help="seconds per child process (default 3600)")
    p.add_argument("--json", help="write the per-config outcomes here")
    p.add_argument("--keep", action="store_true", help="keep the converted YAML (its folder is printed)")
    args = p.parse_args(argv)

    from benchmark import legacy, runners
    from benchmark.config import load_paths
    from benchmark.config.expand import tensor_bytes
    from benchmark.runners.paddle_ops import resolve_op

    files = sorted(Path(args.corpus).glob("*.json"))
    if not files:
        print(f"{args.corpus}: no *.json files", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="legacy_corpus_"))
    out_dir = work / "yaml"
    out_dir.mkdir()
    reports: list[legacy.Report] = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        conv = legacy.convert(data, source=path.name, batch_size=args.batch_size, resolve=resolve_op)
        reports.extend(conv.reports)
        if conv.cases:
            (out_dir / f"{path.stem}.yaml").write_text(legacy.to_yaml(conv), encoding="utf-8")
    cases, issues = load_paths([str(out_dir)], checks=runners.config_checks())
    invalid_names = {i.case for i in issues}
    by_name: dict[str, list] = {}
    for c in cases:
        by_name.setdefault(c.name, []).append(c)

    outcome: dict[tuple[str, int], str] = {}
    to_run: dict[str, object] = {}
    for r in reports:
        key = (r.source, r.index)
        if r.status != "converted":
            outcome[key] = f"not converted: {r.reason}"
            continue
        if any(n in invalid_names or n not in by_name for n in r.cases):
            outcome[key] = "converted, not valid"
            continue
        # each case's forward on CPU, in dynamic mode (or its one mode: a static program)
        cpu = [
            c
            for n in r.cases
            for c in by_name[n]
            if c.place == "cpu"
            and not c.spec.backward
            and c.mode == ("dynamic" if any(o.mode == "dynamic" for o in by_name[n]) else by_name[n][0].mode)
        ]
        if not cpu:
            outcome[key] = "valid; not run on CPU: GPU only (float16, or a GPU-only kernel)"
            continue
        if any(tensor_bytes(c.spec.inputs) > args.max_run_bytes for c in cpu):
            outcome[key] = f"valid; not run on CPU: inputs over {args.max_run_bytes / 1024**3:g} GiB"
            continue
        outcome[key] = "valid; to run"
        for c in cpu:
            to_run[c.id] = c
    print(f"running {len(to_run)} CPU case(s) ...", file=sys.stderr)
    try:
        results = run_cases(out_dir, list(to_run), work, args.timeout)
    finally:
        if args.keep:
            print(f"converted YAML kept in {out_dir}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    detail: dict[str, dict] = {}
    with_reference = 0
    for r in reports:
        key = (r.source, r.index)
        if outcome[key] != "valid; to run":
            continue
        rows = [results[c.id] for n in r.cases for c in by_name[n] if c.id in to_run]
        bad = [row for row in rows if row["status"] not in ("ran", "reference passed")]
        if any(row["status"] == "reference passed" for row in rows):
            with_reference += 1
        if bad:
            worst = bad[0]
            kind = "error" if worst["status"] == "error" else worst["status"]
            outcome[key] = f"valid; run failed: {kind}"
            detail[f"{r.source}#{r.index}"] = worst
        else:
            outcome[key] = "ran on CPU, reference passed or none"

    total = len(reports)
    counts = Counter(outcome.values())
    valid = sum(n for k, n in counts.items() if k.startswith(("valid", "ran")))
    ran = counts["ran on CPU, reference passed or none"]
    print(f"corpus: {len(files)} files, {total} configs ({args.corpus})")
    print(f"converted and valid:          {valid:4d}  {100 * valid / total:5.1f}%")
    print(f"ran one CPU iteration, passed: {ran:4d}  {100 * ran / total:5.1f}%")
    print(f"  of which with a numpy reference that passed: {with_reference}")
    print()
    width = max(map(len, counts))
    for k, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{k:<{width}}  {n:4d}  {100 * n / total:5.1f}%")
    if detail:
        print("\nfailed runs (first failing case of each config):")
        for key, row in sorted(detail.items()):
            print(f"  {key}: {row['id']}: {row['status']}: {row.get('message', '')}")
    if issues:
        print("\nvalidation issues:")
        for i in issues:
            print(f"  {i}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "outcomes": {f"{s}#{i}": o for (s, i), o in outcome.items()},
                    "runs": results,
                    "counts": dict(counts),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
