"""A bursty neighbour: processes that keep the machine's cores busy for BUSY seconds of every PERIOD.

    python eval/neighbour.py [--busy 10] [--period 30] [--procs N] [--duration 3600]

Each of N processes (default: one per CPU this process may use) spins on pure-Python arithmetic
for `--busy` seconds, then sleeps for the rest of the `--period`, all in phase, until `--duration`
seconds have passed or it is stopped (SIGTERM/SIGINT end every process at once). It is the
neighbour of the verdict targets (eval/verdict_histories.py): on a machine whose wall time already
drifts, a burst that takes every core for a third of the time, as a CI neighbour or a compile job
would. It touches no file and no network.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import time


def spin(start: float, busy: float, period: float, until: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    x = 0
    while time.time() < until:
        phase = (time.time() - start) % period
        if phase < busy:
            for i in range(20_000):  # about a millisecond of work between clock reads
                x = (x * 31 + i) & 0xFFFF
        else:
            time.sleep(min(period - phase, max(0.0, until - time.time())))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--busy", type=float, default=10.0, help="seconds busy in each period (default 10)")
    p.add_argument("--period", type=float, default=30.0, help="seconds of a period (default 30)")
    p.add_argument("--procs", type=int, default=len(os.sched_getaffinity(0)), help="busy processes")
    p.add_argument("--duration", type=float, default=3600.0, help="stop after this many seconds")
    args = p.parse_args(argv)
    if not (0 < args.busy <= args.period) or args.procs < 1 or args.duration <= 0:
        p.error("need 0 < --busy <= --period, --procs >= 1 and --duration > 0")
    start = time.time()
    until = start + args.duration
    procs = [
        mp.Process(target=spin, args=(start, args.busy, args.period, until), daemon=True)
        for _ in range(args.procs)
    ]
    for proc in procs:
        proc.start()

    def stop(*_):
        for proc in procs:
            proc.terminate()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for proc in procs:
        proc.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
