"""The AMD ROCm platform: HIP (load_inline) and Triton candidates on an AMD GPU, with torch built for ROCm.

Such a torch answers the `torch.cuda` API (`torch.version.hip` names the HIP version), so this platform is
the CUDA platform with what differs on AMD: no hold before each call (its kernel reads an NVIDIA-only timer),
a flush sized for the L2 and the Infinity Cache (the MALL) behind it, extensions built for the device's own
gfx architecture, and HIP's wording of the errors that leave a device unusable. The defences that carry over
unchanged: events on the caller's stream, the host-clock audit of hidden work, the poisoned allocator cache,
TF32 off. Not yet run on an AMD GPU: docs/platforms.md.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from kforge.platforms.cuda import CudaPlatform
from kforge.platforms.cuda.device import l2_cache_bytes
from kforge.platforms.gpu import error_text, flush_bytes, marked_line

# Infinity Cache (AMD's last-level "MALL", between the L2 and HBM) per architecture, from AMD's product
# specifications. CDNA 2 (gfx90a) and CDNA 1 (gfx908) have none.
INFINITY_CACHE_BYTES = {
    "gfx950": 256 * 1024 * 1024,  # Instinct MI350X / MI355X
    "gfx942": 256 * 1024 * 1024,  # Instinct MI300X / MI300A / MI325X
    "gfx90a": 0,  # Instinct MI210 / MI250 / MI250X
    "gfx908": 0,  # Instinct MI100
    "gfx1100": 96 * 1024 * 1024,  # Radeon RX 7900 XTX
    "gfx1030": 128 * 1024 * 1024,  # Radeon RX 6900 XT
}
# An architecture not in the table may have one: flush as if it had the largest known.
UNKNOWN_INFINITY_CACHE_BYTES = 256 * 1024 * 1024
WAVEFRONT_CDNA = 64

STICKY_ERRORS = (
    "memory access fault by gpu",
    "hiperrorillegaladdress",
    "an illegal memory access was encountered",
    "hiperrorlaunchfailure",
    "unspecified launch failure",
    "device-side assert triggered",
    "hiperrorassert",
    "hsa_status_error",
)


def gfx_arch(gcn_arch_name: str) -> str:
    """The architecture of `gcnArchName` without its feature flags: 'gfx942:sramecc+:xnack-' -> 'gfx942'."""
    return gcn_arch_name.split(":", 1)[0].strip()


def infinity_cache_bytes(arch: str) -> int:
    return INFINITY_CACHE_BYTES.get(arch, UNKNOWN_INFINITY_CACHE_BYTES)


def rocm_flush_bytes(l2_bytes: int, arch: str) -> int:
    """Twice the L2 and the Infinity Cache together, so none of the inputs stays in either."""
    return flush_bytes(l2_bytes + infinity_cache_bytes(arch))


def build_environment(gcn_arch_name: str) -> dict[str, str]:
    """PYTORCH_ROCM_ARCH for exactly this device, so load_inline passes one --offload-arch to hipcc."""
    return {"PYTORCH_ROCM_ARCH": gfx_arch(gcn_arch_name)}


class RocmPlatform(CudaPlatform):
    name = "rocm"
    languages = ("hip", "triton")
    title = "an AMD GPU (ROCm; 64-lane wavefronts on CDNA)"
    language_titles: ClassVar[dict[str, str]] = {"hip": "HIP C++", "triton": "Triton"}
    uses_hold = False
    visible_devices_variable = "HIP_VISIBLE_DEVICES"

    @classmethod
    def is_available(cls) -> bool:
        return torch.version.hip is not None and torch.cuda.is_available()

    def _arch(self) -> str:
        return gfx_arch(torch.cuda.get_device_properties(self._index).gcnArchName)

    def flush_size(self) -> int:
        return rocm_flush_bytes(l2_cache_bytes(torch.cuda.get_device_properties(self._index)), self._arch())

    def device_lost(self, error: BaseException) -> str | None:
        return marked_line(error_text(error), STICKY_ERRORS) or super().device_lost(error)

    def worker_environment(self) -> dict[str, str]:
        return build_environment(torch.cuda.get_device_properties(self._index).gcnArchName)

    def describe(self) -> dict[str, str]:
        properties = torch.cuda.get_device_properties(self._index)
        arch = gfx_arch(properties.gcnArchName)
        facts = super().describe()
        facts.pop("capability", None)
        facts.pop("cuda", None)
        return {**facts, "arch": arch, "hip": str(torch.version.hip),
                "wavefront": str(getattr(properties, "warp_size", WAVEFRONT_CDNA)),
                "infinity_cache_mib": f"{infinity_cache_bytes(arch) / 2**20:.0f}"}
