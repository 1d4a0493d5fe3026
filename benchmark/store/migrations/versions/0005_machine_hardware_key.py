"""A machine is its hardware: drivers, kernel, OS release and Python patch version leave its key.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

`environment.fingerprint` used to hash the GPU driver, kernel, OS release and full Python version
too, so an upgrade started new, empty series. It now hashes the hardware only (issue 13); the
volatile fields are recorded with each run (`run.extra["machine_env"]`). This revision brings an
existing history to that key, changing no measurement:

* every run gets `extra["machine_env"]`, the volatile fields of its machine's description (runs
  recorded before it knew them);
* a machine whose stored fingerprint is the old hash of its own description gets the new one;
  machines that differ only by volatile fields become one (the oldest row is kept): their runs
  move to it, and their series too -- a series the kept machine already has (same case, place,
  mode and metric) takes over the other's results;
* a machine whose fingerprint is not the old hash of its description (set by hand, imported) is
  left as it is.

Downgrade leaves the merged rows merged (there is no telling them apart again) and drops nothing.
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Frozen copies of benchmark.datamodel.environment at the time of this revision: the migration must not
# change when that module does.
OLD_FIELDS = (
    "cpu_model", "cpu_count_logical", "cpu_count_physical", "memory_gib", "gpu_models", "gpu_count",
    "gpu_driver", "os", "os_release", "kernel", "arch", "python_implementation", "python_version",
)  # fmt: skip
VOLATILE = ("gpu_driver", "cuda_driver_version", "kernel", "os_release", "python_version")

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
machine = sa.table(
    "machine", sa.column("id", sa.Integer), sa.column("fingerprint", sa.String), sa.column("info", JSONType)
)
run = sa.table(
    "run", sa.column("id", sa.Integer), sa.column("machine_id", sa.Integer), sa.column("extra", JSONType)
)
series = sa.table(
    "series",
    sa.column("id", sa.Integer),
    sa.column("case_pk", sa.Integer),
    sa.column("machine_id", sa.Integer),
    sa.column("place", sa.String),
    sa.column("mode", sa.String),
    sa.column("metric", sa.String),
)
result = sa.table("result", sa.column("id", sa.Integer), sa.column("series_id", sa.Integer))


def _hash(relevant: dict) -> str:
    blob = json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def old_fingerprint(info: dict) -> str:
    return _hash({k: info.get(k) for k in OLD_FIELDS})


def new_fingerprint(info: dict) -> str:
    relevant = {k: info.get(k) for k in OLD_FIELDS if k not in VOLATILE}
    version = str(info.get("python_version") or "")
    relevant["python_minor"] = ".".join(version.split(".")[:2]) or None
    return _hash(relevant)


def _load(value):
    return json.loads(value) if isinstance(value, str) else (value or {})


def upgrade() -> None:
    conn = op.get_bind()
    machines = [(m.id, m.fingerprint, _load(m.info)) for m in conn.execute(sa.select(machine)).all()]
    # 1. Each run records the volatile fields of the machine it ran on.
    for mid, _, info in machines:
        env = {k: info[k] for k in VOLATILE if info.get(k) is not None}
        for r in conn.execute(sa.select(run.c.id, run.c.extra).where(run.c.machine_id == mid)).all():
            extra = _load(r.extra)
            if "machine_env" not in extra:
                conn.execute(run.update().where(run.c.id == r.id).values(extra={**extra, "machine_env": env}))
    # 2. Machines keyed by their hardware; those that differ only by volatile fields merge.
    groups: dict[str, list[int]] = {}
    for mid, fp, info in sorted(machines):
        if fp == old_fingerprint(info):
            groups.setdefault(new_fingerprint(info), []).append(mid)
    taken = {fp for _, fp, _ in machines}
    for new_fp, ids in groups.items():
        keep, *others = ids
        for other in others:
            _merge(conn, keep, other)
        if new_fp not in taken:
            conn.execute(machine.update().where(machine.c.id == keep).values(fingerprint=new_fp))
            taken.add(new_fp)


def _merge(conn, keep: int, other: int) -> None:
    conn.execute(run.update().where(run.c.machine_id == other).values(machine_id=keep))
    kept = {
        (s.case_pk, s.place, s.mode, s.metric): s.id
        for s in conn.execute(sa.select(series).where(series.c.machine_id == keep)).all()
    }
    for s in conn.execute(sa.select(series).where(series.c.machine_id == other)).all():
        target = kept.get((s.case_pk, s.place, s.mode, s.metric))
        if target is None:
            conn.execute(series.update().where(series.c.id == s.id).values(machine_id=keep))
        else:
            conn.execute(result.update().where(result.c.series_id == s.id).values(series_id=target))
            conn.execute(series.delete().where(series.c.id == s.id))
    conn.execute(machine.delete().where(machine.c.id == other))


def downgrade() -> None:
    pass
