"""GPU telemetry: an NVML sampler thread that runs beside a measured case.

Modules: ``sampler`` (``NvmlSampler``, the thread), ``devices`` (which NVML device a CUDA device is,
what can be attributed to a case, ``warn_once``), ``nvml`` (loading and initializing the library,
``nvml_status``, ``reset_status``), ``summary`` (pure functions of the samples). This file holds
no code; import from those modules.

Usage (the harness starts it before warmup and stops it after the last device synchronize)::

    with NvmlSampler(device_index=0, interval=0.1) as sampler:
        ...warmup, timed rounds, final sync...
    result.telemetry = sampler.telemetry()   # {"summary": {...}, "timeline": [...]} or None

API
---
- ``nvml.nvml_status(nvml=None) -> (available, reason)``: imports ``pynvml`` (nvidia-ml-py) lazily and calls
  ``nvmlInit`` once per process (once per injected module); the answer is cached.
- ``devices.warn_once(nvml=None, emit=None) -> bool``: when NVML is unavailable, emits exactly one line
  ``GPU telemetry unavailable: <reason>`` (once per process; ``emit`` defaults to stderr) and returns
  whether NVML is available.
- ``sampler.NvmlSampler(device_index=0, interval=0.1, nvml=None, emit=None)``: ``start()``/``stop()`` or a
  context manager. ``summary()``, ``timeline()`` and ``telemetry()`` read the samples. ``nvml`` is the
  module to use (default: ``import pynvml``); tests inject a fake with the same functions.
  ``device_index`` is NVML's index or a ``GPU-``/``MIG-`` identifier;
  ``devices.nvml_device_index(cuda_index)``
  maps a ``gpu:N`` place to it under CUDA_VISIBLE_DEVICES (indices, ``GPU-<uuid>`` or a unique prefix,
  ``MIG-<uuid>``, ``MIG-GPU-<uuid>/<gi>/<ci>``).
- ``devices.resolve_device(device, nvml=None) -> DeviceTarget``: the NVML handles behind it, through
  ``nvmlDeviceGetHandleByUUID`` and the boards' MIG device handles. On a MIG slice, memory is read
  from the slice, clocks, temperature and clock-event reasons from its board, and the board's
  utilization, power and energy are *not recorded* (they are shared with the other slices; never the
  whole board's power for one slice). ``device_attribution_note`` (also said by ``warn_once`` and
  the sampler, once per process) is the one line about what cannot be attributed; the summary
  carries it as ``attribution`` with ``not_attributed``.
- ``summary.summarize_timeline(rows)``, ``summary.energy_j(rows)``,
  ``summary.decode_throttle_reasons(mask)``: pure helpers.

Units: utilization in percent, memory in bytes, power in W (NVML reports mW), clocks in MHz,
temperature in degrees C, the energy counter in mJ (NVML's unit; the summary gives joules), ``t`` in
seconds since ``start()``.

Interval
--------
Default 100 ms; floor 10 ms (``sampler.MIN_INTERVAL_S``; a smaller request is raised to it with a warning).
NVML's utilization counters are averaged by the driver over a sample period of 1/6 s to 1 s depending
on the product, and board power on recent GPUs is a 1 s running average, so samples faster than ~100 ms
re-read strongly correlated values; below 10 ms they carry no new information at all while the
sampler's own cost (a handful of driver calls, each a few to tens of microseconds) keeps growing.

Cost on the measured thread
---------------------------
All NVML calls happen on the sampler's daemon thread, which sleeps in ``Event.wait``. The measured
thread only starts the thread (waiting for the first sample, before warmup) and stops it (after the
last sync); it holds no lock the sampler takes. The samples list is appended by the sampler thread
only and read after it has been joined.

What remains is the GIL: pynvml calls the driver through ctypes, which releases and retakes the GIL
around each of the 8 queries of a tick, so a tick costs the measured thread up to ~9 GIL handoffs
(each a few microseconds on an idle machine, up to a scheduler time slice on an oversubscribed one).
``benchmarks/telemetry_overhead.py`` measures it: at the 100 ms default it is within noise; at 10 ms it
can exceed 1% on a loaded machine, hence 100 ms as the default.

Errors
------
A metric that raises ``NVMLError_NotSupported`` is recorded as ``None`` and not queried again (listed
in ``summary()["unsupported"]``). Any other error (an ``NVMLError`` or anything else) in the sampler
thread is caught, counted and listed in ``summary()["errors"]``; it never reaches the benchmark.
"""
