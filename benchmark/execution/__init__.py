"""Running cases in worker processes, parent side: the worker protocol (`workers`), randomized
interleaved trials (`trials`), one case's trials and the result they make (`casetrials`), and the
timing loop both sides share (`measure`). The worker side is `benchmark.runners.worker`: it imports
the frameworks, which only `benchmark.runners` may."""
