"""The stages of the staged (Xe-Forge) pipeline, in the order it runs them, and their human titles."""

from __future__ import annotations

STAGES: tuple[str, ...] = (
    "algorithmic",
    "discovery",
    "dtype",
    "fusion",
    "memory_access",
    "block_pointers",
    "persistent",
    "device_tuning",
    "autotuning",
)

STAGE_TITLES: dict[str, str] = {
    "algorithmic": "algorithmic restructuring",
    "discovery": "discovery of what the hardware offers",
    "dtype": "data types and precision",
    "fusion": "kernel fusion",
    "memory_access": "memory access patterns",
    "block_pointers": "block pointers and tensor descriptors",
    "persistent": "persistent kernels",
    "device_tuning": "device-specific tuning",
    "autotuning": "autotuning of launch parameters",
}
