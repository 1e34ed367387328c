from __future__ import annotations

import torch

from kforge.profiling.workload import measure_workload, min_bytes


class Elementwise(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


class RowSoftmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def test_linear_flops_are_two_m_n_k() -> None:
    m, k, n = 16, 64, 32
    workload = measure_workload(torch.nn.Linear(k, n), [torch.randn(m, k)])
    assert workload.flops == 2 * m * n * k
    assert workload.flops_method == "flop_counter"


def test_elementwise_only_problem_counts_one_op_per_output_element() -> None:
    x, y = torch.randn(10, 20), torch.randn(10, 20)
    workload = measure_workload(Elementwise(), [x, y])
    assert workload.flops_method == "elementwise"
    assert workload.flops == 2 * x.numel()  # the add and the relu


def test_normalizations_count_one_op_per_input_element() -> None:
    x = torch.randn(6, 50)
    workload = measure_workload(RowSoftmax(), [x])
    assert workload.flops_method == "elementwise"
    assert workload.flops == x.numel()


def test_min_bytes_counts_inputs_parameters_and_outputs_once() -> None:
    linear = torch.nn.Linear(64, 32)
    x = torch.randn(16, 64)
    workload = measure_workload(linear, [x])
    expected = 4 * (x.numel() + linear.weight.numel() + linear.bias.numel() + 16 * 32)
    assert workload.min_bytes == expected
    assert workload.dtype == "float32"


def test_min_bytes_counts_a_tensor_passed_twice_once() -> None:
    x = torch.zeros(100, dtype=torch.float16)
    assert min_bytes([x, x], [x]) == 2 * 200


def test_main_dtype_is_the_one_with_most_bytes() -> None:
    workload = measure_workload(Elementwise(), [torch.randn(1000).half(), torch.randn(1000).half()])
    assert workload.dtype == "float16"
