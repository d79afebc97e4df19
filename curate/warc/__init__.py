"""Reading web archives: gzip members, WARC and ARC records, HTTP payloads (no stage, no runtime).

``curate extract`` reads its input through this package; tests, ``sample_data`` and the
benchmarks write theirs with :mod:`curate.warc.writer`.
"""
