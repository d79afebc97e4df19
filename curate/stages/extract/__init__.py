"""The ``extract`` stage: HTML pages in WARC and ARC files to main-content text documents.

    extract_stage.py  the stage (ExtractStage): input files, one output shard per file, counters
    sandbox.py        the time limit: a helper process that runs the extractor, restarted on overrun
    extractors.py     the built-in extractors resiliparse, trafilatura and justext, registered by name
    fast.py           the ``fast`` extractor (the default): resiliparse, a boilerplate pass, trafilatura fallback

Reading the files (gzip, WARC, ARC, HTTP, charsets) is :mod:`curate.warc`'s. This module
imports nothing: the helper process (``python -m curate.stages.extract.sandbox``) imports it
first, and starts without pyarrow or the runtime.
"""
