from __future__ import annotations

from kforge.profiling.render import format_quantity, format_seconds, render_table, short_name
from kforge.profiling.roofline import with_roofline
from kforge.profiling.schema import Peaks, Profile, Workload, kernel_rows

LONG_KERNEL = ("void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, "
               "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::"
               "[lambda() (instance 1)], std::array<char *, 2>>(int, T2, T3)")
# A prompt budget of a few hundred tokens, at a conservative four characters a token.
MAX_CHARS = 1600


def _many_kernels(count: int) -> Profile:
    totals = {f"{LONG_KERNEL}#{index}": (3, float(count - index)) for index in range(count)}
    rows = kernel_rows(totals)
    return Profile(source="torch.profiler", platform="cuda", device="NVIDIA H200", calls=3, rows=rows,
                   device_time_us_per_call=sum(row.total_us for row in rows) / 3, wall_time_us_per_call=900.0,
                   launches_per_call=count)


def test_table_stays_within_budget_however_many_kernels(workload: Workload, peaks: Peaks) -> None:
    profile = with_roofline(_many_kernels(200), workload, peaks)
    text = render_table(profile)
    assert len(text) <= MAX_CHARS
    assert "(192 more kernels)" in text
    assert "compute-bound" in text or "memory-bound" in text
    assert all(len(line) <= 120 for line in text.splitlines())


def test_table_of_a_cpu_profile(cpu_profile: Profile) -> None:
    text = render_table(cpu_profile)
    assert "aten::linear" in text
    assert "op" in text.splitlines()[2]
    assert "Roofline" not in text


def test_short_name_keeps_what_identifies_the_kernel() -> None:
    name = short_name(LONG_KERNEL)
    assert name.startswith("at::native::vectorized_elementwise_kernel<4, at::native::Gelu")
    assert len(name) <= 64
    assert short_name("void add_kernel(float const*, float*, int)") == "add_kernel"
    assert short_name("aten::linear") == "aten::linear"


def test_units() -> None:
    assert format_quantity(1.234e12, "FLOP/s") == "1.23 TFLOP/s"
    assert format_quantity(512, "B") == "512 B"
    assert format_seconds(0.000123) == "123 us"
    assert format_seconds(2.5e-8) == "25 ns"
