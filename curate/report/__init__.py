"""The pipeline report (one self-contained HTML page over a pipeline run) and ``curate stats``.

- :mod:`.collect`: the finished stages, their order, and the report sections each declares it feeds;
- :mod:`.checks`: the warnings shown at the top (stale stages, sources lost, heavy removals);
- :mod:`.sections`: what each part of the page shows, as data; :mod:`.charts`: the matplotlib charts;
- :mod:`.samples`: rejected documents per reason; :mod:`.render`: the Jinja2 template, autoescaped;
- :mod:`.stats`: ``curate stats``.

The report imports no stage module: it reads what stages recorded (docs/report.md).
"""

from curate.report.collect import Run, Stage, collect
from curate.report.render import render, write_report
from curate.report.sections import SECTIONS
from curate.report.stats import stats_lines

__all__ = ["SECTIONS", "Run", "Stage", "collect", "render", "stats_lines", "write_report"]
