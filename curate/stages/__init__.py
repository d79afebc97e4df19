"""One module per stage; each maps documents to documents and counters (no files, no click)."""
