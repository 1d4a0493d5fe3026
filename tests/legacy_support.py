"""What the legacy converter's test files share: where the legacy corpus and fixtures are, the mark
that skips without ../shared, and a legacy variable's JSON."""

from pathlib import Path

import pytest

LEGACY_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "legacy-api-configs"
FIXTURES = Path(__file__).resolve().parent / "data" / "legacy"
needs_legacy = pytest.mark.skipif(
    not LEGACY_DIR.is_dir(),
    reason=f"shared legacy configs not found at {LEGACY_DIR} (checkout without ../shared)",
)


def legacy_files():
    return sorted(LEGACY_DIR.glob("*.json"))


def var(shape, dtype="float32"):
    return {"type": "Variable", "dtype": dtype, "shape": shape}
