"""What a pull request changes: data only (case configs), or code that needs a maintainer's review
before it may run on the self-hosted GPU runner.

A change is data only when every path it touches is a YAML case file under `configs/`. The operator
allowlist is not data in this sense: widening it widens what every config can call.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

DATA_DIR = "configs"
DATA_SUFFIXES = (".yaml", ".yml")
REVIEWED_DATA = ("configs/allowlist.yaml", "configs/allowlist.yml", "configs/index_inputs.yaml")


def code_paths(paths: Iterable[str]) -> list[str]:
    """The paths among `paths` (repository-relative, as `git diff --name-only` prints them) that are
    not case data; an empty list means the change is data only."""
    out = []
    for raw in paths:
        path = raw.strip()
        if not path:
            continue
        p = PurePosixPath(path)
        is_data = (
            p.parts[:1] == (DATA_DIR,)
            and ".." not in p.parts
            and p.suffix in DATA_SUFFIXES
            and path not in REVIEWED_DATA
        )
        if not is_data:
            out.append(path)
    return out
