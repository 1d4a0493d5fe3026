"""Benchmark harness and regression tracker for PaddlePaddle.

Data flows one way: configs -> config (Case objects) -> runners (prepared callables) ->
measure (timed samples) -> results (CaseResult records) -> store -> analysis -> gate/report/plots.
"""

__version__ = "0.1.0"
