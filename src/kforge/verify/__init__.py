"""The trusted core: judges a candidate kernel against its PyTorch reference.

Nothing here imports agents, LLM clients, the store or pipelines: the measurement does not know who asks.
"""
