"""Data parallel on CPU ranks through `paddle.distributed.launch`: the throughput per rank, the
scaling efficiency against one rank, and whether an interrupted job leaves a process behind.
(issue 48)

Trains a registered model (default `lstm_lm` at PaddingRNN's small config) on 1 rank and on
`--ranks` ranks (benchmark/runners/models/data_parallel.py), prints items/s per rank, the job's
and the efficiency; then starts the job again in a child process, interrupts that child with
SIGINT once the ranks run, and lists any process still running from the job (none expected).

    python eval/model_data_parallel.py --out DIR [--ranks 2] [--model lstm_lm]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmark.runners.models import data_parallel as dp

PADDING_RNN_SMALL = {
    "batch_size": 20,
    "num_steps": 20,
    "hidden_size": 200,
    "num_layers": 2,
    "vocab_size": 10000,
}


def job_processes(marker: str) -> list[str]:
    """Command lines of running processes that name `marker` (the job's directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{entry.name}: {cmd[:160]}")
    return found


def interrupted(out: Path, model: str, args: dict, ranks: int) -> list[str]:
    code = (
        "import json, sys; from pathlib import Path; from benchmark.runners.models import data_parallel as dp; "
        f"dp.run({model!r}, json.loads(sys.argv[1]), {ranks}, Path(sys.argv[2]), steps=100000)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, json.dumps(args), str(out)])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(job_processes(str(out))) < ranks + 2:
        time.sleep(0.5)
    time.sleep(3)  # the ranks are training
    running = len(job_processes(str(out)))
    child.send_signal(signal.SIGINT)
    child.wait(timeout=60)
    time.sleep(1)
    print(f"interrupted: {running} processes of the job ran, child exit {child.returncode}")
    return job_processes(str(out))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new directory for the ranks' records and logs")
    p.add_argument("--ranks", type=int, default=2, help="ranks of the parallel job (default 2)")
    p.add_argument("--model", default="lstm_lm", help="a registered model (default lstm_lm)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per rank (default 10)")
    args = p.parse_args(argv)
    model_args = PADDING_RNN_SMALL if args.model == "lstm_lm" else {}
    args.out.mkdir(parents=True, exist_ok=False)
    one = dp.run(args.model, model_args, 1, args.out / "one", steps=args.steps)
    many = dp.run(args.model, model_args, args.ranks, args.out / "many", steps=args.steps)
    s = dp.summarize(many, one)
    unit = "items/s"
    print(f"1 rank: {one[0]['items_per_step'] / one[0]['step_s']:.0f} {unit}")
    print(
        f"{args.ranks} ranks: "
        + ", ".join(f"{x:.0f}" for x in s["per_rank"])
        + f" {unit} per rank, {s['total']:.0f} in all"
    )
    print(f"scaling efficiency: {s['efficiency']:.2f}")
    left = interrupted(args.out / "interrupted", args.model, model_args, args.ranks)
    print("left behind: " + ("none" if not left else "; ".join(left)))
    return 0 if not left else 1


if __name__ == "__main__":
    raise SystemExit(main())
