"""The layout copies of generated Triton code (`_laid_out`, `_cat`, `_reshape` in `_helpers.j2`), run in Triton's
interpreter: each against torch on layouts a forward meets (permuted, narrowed, broadcast, many dims, empty),
and which of them are views, copies by the kernel, or left to the framework."""

from __future__ import annotations

import importlib.util
import math
import random
from typing import Any

import pytest
import torch

from kforge.engine.triton import copies_source

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The copies module as a composed forward gets it, its kernel run by Triton's interpreter."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        path = tmp_path_factory.mktemp("copies") / "copies.py"  # Triton reads a kernel's source from its file
        path.write_text(copies_source())
        spec = importlib.util.spec_from_file_location("kforge_test_copies", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    assert module._INTERPRETED
    return module


class _Counting:
    """Stands in front of the copy kernel: counts its launches (and the last one's options), passes them on."""

    def __init__(self, kernel: Any, run: bool = True) -> None:
        self.kernel, self.run, self.count, self.options = kernel, run, 0, {}

    def __getitem__(self, grid: Any) -> Any:
        self.count += 1

        def launch(*args: Any, **options: Any) -> None:
            self.options = options
            if self.run:
                self.kernel[grid](*args, **options)
        return launch


@pytest.fixture
def launches(copies: Any, monkeypatch: pytest.MonkeyPatch) -> _Counting:
    counting = _Counting(copies._copy_kernel)
    monkeypatch.setattr(copies, "_copy_kernel", counting)
    return counting


def _random(dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(0, 100, shape).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_layout_is_copied_by_the_kernel_exactly(copies: Any, launches: _Counting, dtype: torch.dtype) -> None:
    base = _random(dtype, (5, 3, 7, 2))
    layouts = [base.permute(2, 0, 3, 1), base.narrow(2, 1, 5), base.transpose(0, 3)[:, 1:],
               base[:, :1].expand(5, 4, 7, 2), base[0, 0, :, 0].expand(6, 7)]
    for t in layouts:
        got = copies._laid_out(t)
        assert got.is_contiguous() and got.dtype == t.dtype and got.shape == t.shape
        assert torch.equal(got, t.contiguous())
        assert got.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    assert launches.count == len(layouts), "each layout copied by the kernel, none by the framework"


def test_what_is_already_laid_out_is_itself_and_the_rest_falls_to_the_framework(copies: Any,
                                                                                 launches: _Counting) -> None:
    x = torch.randn(4, 6)
    assert copies._laid_out(x) is x
    many = torch.randn(2, 3, 2, 3, 2, 3).permute(5, 3, 1, 4, 2, 0)  # six dims no two of which merge
    assert copies._copied_dims(many.shape, many.stride(), many.contiguous().stride()) is None
    assert torch.equal(copies._laid_out(many), many.contiguous())
    assert launches.count == 0, "more than four dims after merging: the framework's copy"
    # six dims that merge into two are the kernel's
    mergeable = torch.randn(2, 3, 4, 2, 3, 4).permute(3, 4, 5, 0, 1, 2)
    assert torch.equal(copies._laid_out(mergeable), mergeable.contiguous()) and launches.count == 1
    complex_values = torch.randn(3, 4, dtype=torch.complex64).t()
    assert torch.equal(copies._laid_out(complex_values), complex_values.contiguous()) and launches.count == 1
    empty = torch.randn(0, 5).t()
    assert copies._laid_out(empty).shape == (5, 0)


def test_merged_dims_keep_both_layouts(copies: Any) -> None:
    t = torch.randn(4, 5, 6).permute(0, 2, 1)  # (4, 6, 5): dims 0 and 1 do not merge in the source
    dims = copies._copied_dims(t.shape, t.stride(), (30, 5, 1))
    assert dims == [(1, 0, 0), (4, 30, 30), (6, 1, 5), (5, 6, 1)]
    row = torch.randn(8, 16)[:, :4]  # rows of a wider tensor: the two dims stay two in the source
    assert copies._copied_dims(row.shape, row.stride(), (4, 1)) == [(1, 0, 0), (1, 0, 0), (8, 16, 4), (4, 1, 1)]
    whole = torch.randn(3, 4, 5)
    assert copies._copied_dims(whole.shape, whole.stride(), whole.stride())[-1] == (60, 1, 1)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_is_torch_cat(copies: Any, launches: _Counting, dim: int) -> None:
    a = torch.randn(3, 4, 5)
    b = torch.randn(5, 4, 3).permute(2, 1, 0)  # the same shape, another layout
    size = [3, 4, 5]
    size[dim] = 2
    c = torch.randn(*size)
    empty = a.narrow(dim, 0, 0)
    got = copies._cat([a, b, c, empty], dim)
    assert torch.equal(got, torch.cat([a, b, c, empty], dim)) and got.is_contiguous()
    assert launches.count == 3, "a kernel per piece with elements"


def test_cat_of_pieces_torch_would_promote_or_refuse_is_torch_cat(copies: Any, launches: _Counting) -> None:
    a, b = torch.randn(2, 3), torch.randint(0, 5, (2, 3))
    assert torch.equal(copies._cat([a, b], 0), torch.cat([a, b], 0))  # float and int: torch promotes
    assert launches.count == 0
    with pytest.raises(RuntimeError):
        copies._cat([a, torch.randn(3, 3)], 1)  # other sizes differ: torch's own error


def test_a_reshape_is_a_view_where_the_layout_allows_else_a_copy(copies: Any, launches: _Counting) -> None:
    x = torch.randn(8, 3, 4)
    view = copies._reshape(x, (24, 4))
    assert view.data_ptr() == x.data_ptr() and torch.equal(view, x.reshape(24, 4))
    narrowed = x.narrow(2, 0, 2)  # (8, 3, 2), not contiguous, but its first two dims merge
    assert copies._reshape(narrowed, (24, 2)).data_ptr() == x.data_ptr() and launches.count == 0
    permuted = x.permute(1, 0, 2)  # (3, 8, 4): the first two dims do not merge
    copied = copies._reshape(permuted, (24, 4))
    assert torch.equal(copied, permuted.reshape(24, 4)) and copied.data_ptr() != x.data_ptr() and launches.count == 1
    assert torch.equal(copies._reshape(permuted, (-1, 8)), permuted.reshape(-1, 8))
    assert copies._reshape(torch.randn(1, 1), ()).shape == ()


def test_viewable_agrees_with_torch_on_random_layouts(copies: Any) -> None:
    rng = random.Random(0)
    checked = 0
    for _ in range(1500):
        sizes = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 4))]
        t = torch.empty(sizes).permute(*rng.sample(range(len(sizes)), len(sizes)))
        if rng.random() < 0.3 and t.shape[0] > 1:
            t = t.narrow(0, 0, t.shape[0] - 1)
        factors = [p for p in (2, 3, 5) for _ in range(100) if t.numel() % p ** (_ + 1) == 0]
        rng.shuffle(factors)
        shape: list[int] = []
        for factor in factors:
            if shape and rng.random() < 0.5:
                shape.append(shape.pop() * factor)
            else:
                shape.append(factor)
            if rng.random() < 0.2:
                shape.append(1)
        if math.prod(shape) != t.numel():
            continue
        try:
            t.view(shape)
            viewable = True
        except RuntimeError:
            viewable = False
        assert copies._viewable(t, tuple(shape)) == viewable, (tuple(t.shape), t.stride(), shape)
        checked += 1
    assert checked > 1000


def test_offsets_past_int32_take_the_wide_kernel(copies: Any, launches: _Counting) -> None:
    launches.run = False  # the options the kernel is launched with, not the copy (2**31 elements)
    one = torch.zeros(1, dtype=torch.uint8)
    assert copies._copy_into(one.expand(2**31), one.expand(2**31))
    assert launches.options["WIDE"] is True
    assert copies._copy_into(torch.empty(3, 5), torch.randn(5, 3).t())
    assert launches.options["WIDE"] is False and launches.count == 2
