"""`benchmark bisect`: the first build in an ordered range whose metric is worse than the first
build's by at least the case's minimum effect.

Modules: `search` (the pure bisection over an ordered list of builds with a measure callback:
ends confirmed first, binary search, skips as `git bisect skip`, every build measured at most
once, every step seen reported). Builds (environments) and measuring live beside it and import
their heavy dependencies where they use them.
"""
