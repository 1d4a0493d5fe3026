"""Test doubles for things this machine does not have (an NVIDIA driver behind NVML)."""
