"""LLM agents: the generation agent writes and refines kernels; the analyst reads profiles and recommends.

Prompts are Jinja2 templates in `prompts/`; the single-shot example for each target lives in
`kforge/data/examples/<platform>/<language>/`.
"""
