"""The builtin synthesis engine: a proposer that lowers a reference to fused kernels with no LLM.

capture (torch.fx) -> ir.Program -> simplify -> backend (cpp_backend, triton/) -> variants, judged by the
harness like any other candidate.
"""
