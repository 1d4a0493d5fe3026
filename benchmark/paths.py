"""Where things are: the shipped configs, the user's project, its results and its history.

Two questions, one answer each:

- the harness's own files (case configs, gates.yaml, the operator allowlist) sit beside the package,
  in the checkout it is installed from: :data:`CONFIGS_DIR`;
- the user's data (the default history, reports, summary JSON) goes under ``results/`` of the project
  the command runs in: the nearest directory at or above the working directory that has a
  ``pyproject.toml`` or a ``.git`` (else the working directory), :func:`project_root`.

Only the standard library is imported here, so any module (and the CLI's start-up) may use it.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_DIR = PACKAGE_DIR.parent
CONFIGS_DIR = CHECKOUT_DIR / "configs"
GATES_PATH = CONFIGS_DIR / "gates.yaml"
ALLOWLIST_PATH = CONFIGS_DIR / "allowlist.yaml"

DB_URL_ENV = "BENCHMARK_DB_URL"
# Shared by the runs of one job (e.g. the shards of one nightly): the suite records it, the gate
# and the exports take it.
RUN_GROUP_ENV = "BENCHMARK_RUN_GROUP"

RESULTS_DIR_NAME = "results"
HISTORY_RELATIVE_PATH = Path(RESULTS_DIR_NAME) / "history.sqlite"


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest directory at or above `start` (default: cwd) with a pyproject.toml or .git."""
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / ".git").exists():
            return candidate
    return here


def results_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """``<project>/results``: the default history, reports and the suite's summary JSON."""
    return (Path(root) if root is not None else project_root()) / RESULTS_DIR_NAME


def history_path(root: str | os.PathLike[str] | None = None) -> Path:
    """``<project>/results/history.sqlite``, absolute."""
    return (Path(root).resolve() if root is not None else project_root()) / HISTORY_RELATIVE_PATH


def default_db_url(root: str | os.PathLike[str] | None = None) -> str:
    """``sqlite:///<project>/results/history.sqlite`` (absolute)."""
    return f"sqlite:///{history_path(root)}"


def configured_db(url: str | None = None, root: str | os.PathLike[str] | None = None) -> str:
    """The history asked for: `url`, else $BENCHMARK_DB_URL, else the project's default SQLite URL
    (as given: see :func:`db_url` for a path)."""
    return url or os.environ.get(DB_URL_ENV) or default_db_url(root)


def db_url(url: str | None = None, root: str | os.PathLike[str] | None = None) -> str:
    """The history to use (:func:`configured_db`) as a URL: a value without ``://`` is a path to a
    SQLite file (``results/h.sqlite``), made absolute."""
    chosen = configured_db(url, root)
    if "://" not in chosen:
        return f"sqlite:///{Path(chosen).expanduser().resolve()}"
    return chosen


def shown_path(path: str | os.PathLike[str]) -> str:
    """`path` relative to the working directory when it is inside it, else absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
