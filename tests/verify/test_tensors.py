"""Comparing a candidate's output as its caller's stream saw it with the output once the device settled."""

from __future__ import annotations

import torch

from kforge.verify.tensors import same_bits


def test_identical_contents_match_nan_included() -> None:
    value = torch.tensor([1.0, float("nan"), -0.0])
    assert same_bits(value, value.clone())
    assert same_bits((value, 3, [value]), (value.clone(), 3, [value.clone()]))
    assert same_bits(float("nan"), float("nan"))


def test_any_changed_bit_or_shape_is_a_difference() -> None:
    value = torch.tensor([1.0, 2.0, 3.0])
    assert not same_bits(value, torch.tensor([1.0, 2.0, 3.0000002]))
    assert not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert not same_bits(value, value.double())
    assert not same_bits(value, value[:2].clone())
    assert not same_bits((value,), [value])


def test_every_dtype_and_shape_compares() -> None:
    for value in (torch.ones(2, 3, dtype=torch.bool), torch.arange(6, dtype=torch.int64).reshape(3, 2),
                  torch.zeros(0), torch.tensor(3.5), torch.randn(4, 5).t(), torch.randn(3, dtype=torch.bfloat16)):
        assert same_bits(value, value.clone())


def test_torchs_named_tuples_are_handed_over_as_plain_tuples_and_look_alikes_are_not() -> None:
    import collections

    import pytest

    from kforge.verify.tensors import UnsafeOutput, plain_copy

    values = torch.randn(4, 5)
    copied = plain_copy(values.max(dim=1))
    assert type(copied) is tuple and len(copied) == 2 and copied[0].equal(values.max(dim=1).values)
    look_alike = collections.namedtuple("max", ["values", "indices"])
    with pytest.raises(UnsafeOutput):
        plain_copy(look_alike(values, values))
