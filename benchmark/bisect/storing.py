"""Every build a bisection counts, stored as a run of one run group ``bisect-<UTC time>``.

Each run carries a note naming the build (its label, interpreter and paddle version), the trigger
"bisect" (so `benchmark gate --run latest` never takes it for the suite's latest run) and the machine
fingerprint suffixed "/bisect", so its results live in series of their own and never become a
baseline of the suite's history (as `benchmark compare` does with "/compare-A" and "/compare-B"). A
build is stored as soon as it is counted: an interrupted bisection keeps what it measured.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.datamodel import environment
from benchmark.store import open_store

if TYPE_CHECKING:
    from benchmark.compare.sides import Side
    from benchmark.datamodel.result import CaseResult

FINGERPRINT_SUFFIX = "/bisect"


class BisectStore:
    """The history a bisection writes its builds to (see the module)."""

    def __init__(self, url: str, group: str, *, root: Path) -> None:
        self.store = open_store(url)
        self.group, self.root = group, root
        machine = environment.collect_machine()
        fp = machine.get("fingerprint") or environment.fingerprint(machine)
        self.machine = environment.MachineDescription.of(
            {**machine, "fingerprint": f"{fp}{FINGERPRINT_SUFFIX}"}
        )
        self.run_ids: list[int] = []
        self._lock = threading.Lock()  # builds confirmed at once are stored one at a time

    def add_build(self, label: str, python: str, side: Side | None, results: Sequence[CaseResult]) -> int:
        """Store one counted build as a complete run of the group; returns its run id."""
        framework = (side.info.get("framework") if side is not None else None) or {}
        run = environment.collect_run(framework, trigger="bisect", cwd=self.root)
        version = framework.get("paddle_version", "?")
        note = f"bisect build {label}: {python}, paddle {version}"
        run.update(run_group=self.group, expected_results=len(results), note=note)
        with self._lock:
            run_id = self.store.begin_run(self.machine, environment.RunDescription.of(run))
            self.store.add_results(run_id, list(results))
            self.store.finish_run(run_id, "complete", note=note)
            self.run_ids.append(run_id)
        return run_id

    def close(self) -> None:
        self.store.close()
