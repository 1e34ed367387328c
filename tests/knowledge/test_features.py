"""What a reference problem contains, read from its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.knowledge import problem_features

EXAMPLES = Path(__file__).parents[2] / "examples"

EXPECTED = {
    "causal_depthwise_conv1d": {"convolution"},
    "conv2d_scaled_mish": {"convolution", "elementwise"},
    "gated_channel_scale": {"elementwise"},
    "linear_film_silu_clamp": {"gemm", "elementwise"},
    "linear_gelu_tanh": {"gemm", "elementwise"},
    "logmeanexp_pool": {"reduction", "elementwise"},
    "temperature_softmax": {"reduction", "elementwise"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_examples(name: str) -> None:
    assert problem_features((EXAMPLES / name / "problem.py").read_text()) == EXPECTED[name]


def test_every_bundled_example_has_expected_features() -> None:
    assert {path.parent.name for path in EXAMPLES.glob("*/problem.py")} == set(EXPECTED)


def _model(body: str) -> str:
    return f"import torch\nimport torch.nn.functional as F\n\nclass Model(torch.nn.Module):\n{body}"


def test_attention_from_softmax_of_a_product_times_values() -> None:
    source = _model("""
    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1)
        weights = torch.softmax(scores * 0.125, dim=-1)
        return weights @ v
""")
    assert problem_features(source) == {"attention", "gemm", "reduction", "elementwise"}


def test_attention_from_sdpa() -> None:
    source = _model("""
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
""")
    assert problem_features(source) == {"attention", "gemm", "reduction"}


def test_a_softmax_not_fed_into_a_product_is_not_attention() -> None:
    source = _model("""
    def forward(self, a, b):
        return torch.softmax(torch.matmul(a, b), dim=-1)
""")
    assert "attention" not in problem_features(source)


def test_arithmetic_in_init_and_get_inputs_does_not_count() -> None:
    source = _model("""
    def __init__(self, n):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(n * 2)

    def forward(self, x):
        return self.pool(x)
""") + "\n\ndef get_inputs():\n    return [torch.randn(4, 4) * 3.0]\n"
    assert problem_features(source) == {"reduction"}


def test_unparsable_source_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        problem_features("class Model(:\n")
