"""The gate: its settings (`settings`, configs/gates.yaml), how one series is decided (`series`) and
the judge over a run (`judge`: decisions, FDR, the notice when there is nothing to compare)."""
