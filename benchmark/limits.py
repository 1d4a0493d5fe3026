"""Caps a config must respect, checked before anything is expanded or allocated (standard library
only, so the CLI can show them in its help without loading the config machinery)."""

# Expanded cases of one config entry (grid x dtypes x places x modes ...); overridable per call.
DEFAULT_MAX_CASES = 1000
# Default ceiling on the bytes a single case may allocate for its inputs (and their gradients),
# checked before anything is allocated. Overridable with `max_bytes` / --bench-max-bytes.
DEFAULT_MAX_BYTES = 8 * 1024**3
