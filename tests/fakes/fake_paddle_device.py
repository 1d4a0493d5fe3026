"""A fake of the CUDA side of ``paddle.device`` for a machine without a GPU build of paddle.

It has the names, signatures and place-string rules of the real modules, read from the installed
Paddle 3.3.1 (``paddle/device/__init__.py``, ``paddle/device/cuda/__init__.py``) and from the
paddlepaddle 2.6.2 wheel's python files (the GPU wheel's python API is the same code):

- ``paddle.device.cuda.max_memory_allocated(device=None)`` and, in 3.x only,
  ``reset_max_memory_allocated(device=None)``: ``device`` is None, an int, a ``CUDAPlace`` or a
  string ``"gpu:N"``; any other string raises ``ValueError: The current string gpu is not expected``
  (``extract_cuda_device_id``).
- ``paddle.device.synchronize(device=None)``: also accepts ``"gpu"`` (``_convert_to_place``).
- ``paddle.device.Event(enable_timing=False, blocking=False, interprocess=False)`` in 3.x
  (2.6: ``Event(device=None, enable_timing=False, ...)``) with ``record(stream=None)``,
  ``synchronize()`` and ``elapsed_time(end_event)``, which in 2.6 is ``return 0``.

`FakePaddle(version="3.3.1")` is one fake ``paddle`` module (``__version__``, ``device``,
``CUDAPlace``, ``ones``, ``matmul``); `version="2.6.2"` gives the 2.6 behaviour. Device time is
scripted: every ``matmul`` (the probe's work) and every `FakePaddle.work(seconds)` advance the fake
device clock that events read.
"""

from __future__ import annotations

import types

# Parameter names of the real functions, per version (2.6.2 read from the wheel; 3.3.1 is also
# checked against the installed paddle by tests/test_runners.py).
SIGNATURES = {
    "2.6.2": {
        "max_memory_allocated": ["device"],
        "synchronize": ["device"],
        "Event.__init__": ["self", "device", "enable_timing", "blocking", "interprocess"],
        "Event.record": ["self", "stream"],
        "Event.elapsed_time": ["self", "end_event"],
    },
    "3.3.1": {
        "max_memory_allocated": ["device"],
        "reset_max_memory_allocated": ["device"],
        "synchronize": ["device"],
        "Event.__init__": ["self", "enable_timing", "blocking", "interprocess"],
        "Event.record": ["self", "stream"],
        "Event.elapsed_time": ["self", "end_event"],
    },
}


class CUDAPlace:
    def __init__(self, index: int) -> None:
        self._index = int(index)

    def get_device_id(self) -> int:
        return self._index


class CPUPlace:
    pass


class FakeDevice:
    """The device state behind the fake modules: a clock, allocated bytes, and their peak."""

    def __init__(self, count: int = 1) -> None:
        self.count = count
        self.clock_s = 0.0
        self.allocated = [0] * count
        self.peak = [0] * count
        self.calls: list[tuple[str, object]] = []

    def extract_cuda_device_id(self, device, op_name: str) -> int:
        """paddle.device.cuda.extract_cuda_device_id (the same rules in 2.6.2 and 3.3.1)."""
        if device is None:
            return 0
        if isinstance(device, bool) or not isinstance(device, int | str | CUDAPlace):
            raise ValueError(
                f"The device type {device} is not expected. Because {op_name} only support int, str or "
                "paddle.CUDAPlace. Please input appropriate device again!"
            )
        if isinstance(device, int):
            device_id = device
        elif isinstance(device, CUDAPlace):
            device_id = device.get_device_id()
        elif device.startswith("gpu:"):
            device_id = int(device[4:])
        else:
            raise ValueError(
                f"The current string {device} is not expected. Because {op_name} only support string which "
                "is like 'gpu:x'. Please input appropriate string again!"
            )
        assert device_id >= 0, f"The device id must be not less than 0, but got id = {device_id}."
        assert device_id < self.count, f"The device id {device_id} exceeds gpu card number {self.count}"
        return device_id

    def allocate(self, index: int, nbytes: int) -> None:
        self.allocated[index] += nbytes
        self.peak[index] = max(self.peak[index], self.allocated[index])


def _cuda_module(dev: FakeDevice, version: str) -> types.SimpleNamespace:
    def max_memory_allocated(device=None):
        index = dev.extract_cuda_device_id(device, op_name="paddle.device.cuda.max_memory_allocated")
        dev.calls.append(("max_memory_allocated", device))
        return dev.peak[index]

    def reset_max_memory_allocated(device=None):
        index = dev.extract_cuda_device_id(device, op_name="paddle.device.cuda.reset_max_memory_allocated")
        dev.calls.append(("reset_max_memory_allocated", device))
        dev.peak[index] = dev.allocated[index]

    def synchronize(device=None):
        dev.calls.append(("cuda.synchronize", device))

    def device_count():
        return dev.count

    cuda = types.SimpleNamespace(
        max_memory_allocated=max_memory_allocated,
        synchronize=synchronize,
        device_count=device_count,
    )
    if not version.startswith("2."):
        cuda.reset_max_memory_allocated = reset_max_memory_allocated
    return cuda


def _event_class(dev: FakeDevice, version: str) -> type:
    legacy = version.startswith("2.")

    class Event:
        def record(self, stream=None):
            self.t = dev.clock_s

        def synchronize(self):
            pass

        def elapsed_time(self, end_event):
            if legacy:
                return 0  # paddle 2.6.2, paddle/device/__init__.py: `return 0`
            return (end_event.t - self.t) * 1000.0

    if legacy:

        def __init__(self, device=None, enable_timing=False, blocking=False, interprocess=False):
            self.t = None

    else:

        def __init__(self, enable_timing=False, blocking=False, interprocess=False):
            self.t = None

    Event.__init__ = __init__
    return Event


class FakePaddle:
    """A fake ``paddle`` module with a CUDA build on `count` devices."""

    def __init__(self, version: str = "3.3.1", count: int = 1, compiled_with_cuda: bool = True) -> None:
        self.__version__ = version
        self.dev = FakeDevice(count)
        self.CUDAPlace = CUDAPlace
        self.CPUPlace = CPUPlace

        def synchronize(device=None):
            if isinstance(device, str) and device not in ("gpu",) and not device.startswith("gpu:"):
                raise ValueError(f"The device should not be {device!r}")
            self.dev.calls.append(("device.synchronize", device))

        self.device = types.SimpleNamespace(
            cuda=_cuda_module(self.dev, version),
            Event=_event_class(self.dev, version),
            synchronize=synchronize,
            is_compiled_with_cuda=lambda: compiled_with_cuda,
        )

    # Static mode: device work is only queued when running eagerly (a static `ones` builds a graph).
    static_mode = False

    def in_dynamic_mode(self) -> bool:
        return not self.static_mode

    def enable_static(self) -> None:
        self.static_mode = True

    def disable_static(self) -> None:
        self.static_mode = False

    def work(self, seconds: float) -> None:
        """Queue device work that takes `seconds` on the fake device clock."""
        self.dev.clock_s += seconds

    def ones(self, shape, dtype="float32"):
        self.dev.allocate(0, 4 * shape[0] * shape[1])
        return shape

    def matmul(self, x, y):
        if not self.static_mode:
            self.work(20e-6)
        return x
