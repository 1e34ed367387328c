"""kforge: fast compute kernels written by LLM agents, proven correct and fast on real hardware."""

__version__ = "0.1.0"
