"""curate: raw public text to a tokenized LLM training corpus (the MT-NLG recipe)."""

__version__ = "0.1.0"
