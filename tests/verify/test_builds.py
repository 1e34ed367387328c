"""The build cache's key: what changes the library must change the key, and nothing else may."""

from __future__ import annotations

import pytest

from kforge.verify.extension_cache import build_key

CUDA = "__global__ void k() {}"


def key(*args: object, **kwargs: object) -> str:
    return build_key("ext", "int f();", args, kwargs)


def test_cuda_builds_are_keyed_by_target_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    hopper = key(cuda_sources=CUDA), key(CUDA)  # cuda_sources by keyword or by position
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    assert key(cuda_sources=CUDA) != hopper[0]
    assert key(CUDA) != hopper[1]


def test_cpp_builds_ignore_the_cuda_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    first = key(extra_cflags=["-O3"])
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    assert key(extra_cflags=["-O3"]) == first


def test_sources_and_flags_change_the_key() -> None:
    assert key(cuda_sources=CUDA) != key(cuda_sources=CUDA + " ")
    assert key(cuda_sources=CUDA, extra_cuda_cflags=["-O3"]) != key(cuda_sources=CUDA)
