"""The ``curate`` command line, built from the stage registry.

Every stage registered with ``@stage("name", section=...)`` (``curate/registry.py``; built-in
or from an installed package's ``curate.stages`` entry point) is a command, ``"dedup fuzzy"``
a command of the group ``dedup``. Each command is built from its stage class
(``curate/runtime``): the shared options it names, one option per declared parameter (type,
default, bounds and help from the declaration), and ``--params FILE.yaml`` with the same
keys. A stage module is only imported when its command runs (or when ``--help`` lists it).
Every user mistake becomes one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import logging
import sys
import typing
from dataclasses import MISSING, replace
from typing import Any

import click

from curate import __version__
from curate.errors import CurateError, ParamError
from curate.registry import SECTIONS

log = logging.getLogger("curate")


class LazyGroup(click.Group):
    """A click group whose stage commands come from the stage registry (``curate/registry.py``), listed by section.

    ``prefix`` is the group's place in the command tree (``""`` for the root, ``"dedup "`` for
    ``curate dedup``): the stage registered as ``"dedup fuzzy"`` is this group's ``fuzzy``. A
    stage module is imported only when its command runs, or when ``--help`` lists it.
    """

    def __init__(self, *args: Any, prefix: str = "", section: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        self.section = section  # this group's own heading in its parent's --help
        self.order: list[str] = []  # plain click commands (inspect, stats, report), in the order they were added

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        self.order.append(name or cmd.name or "")

    def _rows(self) -> list[tuple[str, str, float]]:
        """``(name, section, order)`` of every command of this group: stages, sub-groups of stages, plain commands."""
        from curate.registry import stage_commands

        rows: dict[str, tuple[str, str, float]] = {}
        for command, _cls, meta in stage_commands():
            if not command.startswith(self.prefix):
                continue
            first = command[len(self.prefix) :].split(" ", 1)[0]
            section, order = meta.get("section", "inspect"), meta.get("order", 100.0)
            if first in rows:
                _, s0, o0 = rows[first]
                section, order = (s0, o0) if o0 <= order else (section, order)
            rows[first] = (first, section, order)
        for i, name in enumerate(self.order):
            cmd = self.commands.get(name)
            if name not in rows and cmd is not None:
                section = getattr(cmd, "section", None) or "inspect"
                rows[name] = (name, section, 1000.0 + i)
        return sorted(rows.values(), key=lambda r: (SECTIONS.index(r[1]) if r[1] in SECTIONS else len(SECTIONS), r[2], r[0]))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, _, _ in self._rows()]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        from curate.registry import stages

        full = self.prefix + name
        if not self.prefix and name in _GROUP_HELP:  # a built-in group: nothing to import yet
            self.commands[name] = LazyGroup(name=name, prefix=full + " ", help=_GROUP_HELP[name])
            return self.commands[name]
        try:
            entry = stages.get(full)
        except CurateError:
            entry = None
        if entry is not None:
            self.commands[name] = stage_command(name, entry.obj)
            return self.commands[name]
        sub = full + " "
        for _command, _cls, meta in _stage_commands_with_prefix(sub):
            group = LazyGroup(name=name, prefix=sub, section=meta.get("section"), help=_GROUP_HELP.get(name.strip(), f"{name} stages."))
            self.commands[name] = group
            return group
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, list[tuple[str, str]]] = {}
        for name, section, _ in self._rows():
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            rows.setdefault(section, []).append((name, cmd.get_short_help_str(limit=formatter.width - 20)))
        for section in [*SECTIONS, *(s for s in rows if s not in SECTIONS)]:
            if section in rows:
                with formatter.section(section.capitalize()):
                    formatter.write_dl(rows[section])


def _stage_commands_with_prefix(prefix: str) -> list[tuple[str, type, dict[str, Any]]]:
    from curate.registry import stage_commands, stages

    known = [e for e in stages.loaded() if e.startswith(prefix)]
    if known:  # a group already loaded: do not import every stage module to find it
        return [(n, stages.loaded()[n].obj, stages.loaded()[n].meta) for n in known]
    return [c for c in stage_commands() if c[0].startswith(prefix)]


#: What a group of stages is for, in ``curate --help`` (a group a plugin makes gets a generic line).
_GROUP_HELP = {
    "download": "Download source data: Pile-style subsets (hub or local files), CommonCrawl WARCs.",
    "quality": "Quality classifier (GPT-3 / MT-NLG): train fastText on curated vs raw web text, score and sample.",
    "dedup": "Remove exact and near duplicates across all inputs together (global stages).",
}


class CurateCLI(LazyGroup):
    """The root group: its errors are one line on stderr (exit 2 for usage, 1 otherwise, 130 on Ctrl-C)."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:  # type: ignore[override]
        extra.pop("standalone_mode", None)
        try:
            rv = super().main(args, prog_name or "curate", standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
            click.echo("curate: interrupted; finished shards are kept: run the same command again to resume", err=True)
            sys.exit(130)
        except click.UsageError as exc:
            cmd = exc.ctx.command_path if exc.ctx else "curate"
            click.echo(f"{cmd}: error: {exc.format_message()} (see '{cmd} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"curate: error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except CurateError as exc:
            click.echo(f"curate: error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:  # disk full, permissions, a vanished file: one line, never a traceback
            import os

            why = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc) or type(exc).__name__)
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"curate: error: {where}{why}", err=True)
            sys.exit(1)
        if isinstance(rv, int):
            sys.exit(rv)
        sys.exit(0)


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("curate: %(message)s"))
    root = logging.getLogger("curate")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


# --------------------------------------------------------------------------- commands from declarations


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True); ``list[X]`` stays."""
    args = typing.get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else str), True
    return annotation, False


def _click_type(base: Any, decl: Any) -> Any:
    if decl.choices:
        return click.Choice(list(decl.choices))
    bounds = {"min": decl.min, "max": decl.max, "min_open": decl.min_open, "max_open": decl.max_open}
    if base is int:
        return click.IntRange(**bounds) if decl.min is not None or decl.max is not None else click.INT
    if base is float:
        return click.FloatRange(**bounds) if decl.min is not None or decl.max is not None else click.FLOAT
    return click.STRING


def _option(name: str, annotation: Any, default: Any, decl: Any) -> click.Option:
    base, _optional = _unwrap(annotation)
    flag = decl.flag or f"--{name.replace('_', '-')}"
    is_list = typing.get_origin(base) in (list, tuple)
    item = typing.get_args(base)[0] if is_list else base
    kw: dict[str, Any] = {"help": decl.help, "required": decl.required, "show_default": decl.show_default}
    if decl.metavar:
        kw["metavar"] = decl.metavar
    if base is bool:
        if decl.secondary:
            return click.Option([f"{flag}/{decl.secondary}", name], default=bool(default), **kw)
        return click.Option([flag, name], is_flag=True, default=bool(default), **{**kw, "show_default": False})
    if is_list or decl.multiple:
        kw["multiple"] = True
        default = tuple(default or ())
        if not default:
            kw["show_default"] = False
    elif default is None:
        kw["show_default"] = False
    if decl.flag_value is not None:
        kw.update(is_flag=False, flag_value=decl.flag_value)
    return click.Option([flag, name], type=_click_type(item, decl), default=default, **kw)


def _field_default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


def _load_params_file(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """``--params FILE.yaml``: option values by name (``min_score: 0.5``); the command line wins."""
    if not value:
        return
    from curate.config import check_keys, load_yaml

    data = load_yaml(value) or {}
    names = {p.name: p for p in ctx.command.params if p.name and p.name != "params"}
    aliases = {"in": "inputs"}
    norm = (
        {aliases.get(str(k).replace("-", "_"), str(k).replace("-", "_")): v for k, v in (data or {}).items()}
        if isinstance(data, dict)
        else data
    )
    check_keys(norm, set(names), f"the options of curate {ctx.command.name}", value)
    for key, v in norm.items():
        if names[key].multiple and not isinstance(v, list):
            norm[key] = [v]
    ctx.default_map = {**(ctx.default_map or {}), **norm}


_PARAMS_OPTION = click.Option(
    ["--params", "params"],
    metavar="FILE.yaml",
    is_eager=True,
    expose_value=False,
    callback=_load_params_file,
    help="Read option values from a YAML mapping (keys are the option names, e.g. min_score: 0.5); the command line wins.",
)


def stage_command(name: str, cls: type) -> click.Command:
    """A click command for a stage class: shared options, its declared parameters, ``--params``; runs ``run_stage``."""
    from curate.runtime import COMMON, Common, declared_params

    hints = typing.get_type_hints(cls)
    params: list[click.Parameter] = []
    for opt in cls.options:
        annotation, default, decl = COMMON[opt]
        decl = replace(decl, help=cls.option_help.get(opt, decl.help))
        params.append(_option(opt, annotation, cls.option_defaults.get(opt, default), decl))
    fields = declared_params(cls)
    for f, decl in fields:
        params.append(_option(f.name, hints[f.name], _field_default(f), decl))
    params.append(_PARAMS_OPTION)
    stage_fields = {f.name: decl for f, decl in fields}

    def callback(**values: Any) -> None:
        from curate.runtime import run_stage

        common_kw = {k: values.pop(k) for k in list(values) if k in cls.options}
        if "inputs" in common_kw:
            common_kw["inputs"] = list(common_kw["inputs"])
        kwargs = {}
        for key, value in values.items():
            decl = stage_fields[key]
            if isinstance(value, tuple):
                value = list(value)
            if decl.split and isinstance(value, list):
                value = [p.strip() for v in value for p in str(v).split(",") if p.strip()]
            kwargs[key] = value
        try:
            stage = cls(**kwargs)
        except ParamError as exc:
            raise click.BadParameter(str(exc).split(": ", 1)[1], param_hint=exc.option) from None
        record = run_stage(stage, Common(**common_kw))
        for line in record.get("summary") or []:
            click.echo(line)

    doc = (cls.__doc__ or "").strip()
    return click.Command(name, params=params, callback=callback, help=doc, short_help=doc.split("\n", 1)[0].rstrip("."))


# --------------------------------------------------------------------------- the commands


@click.group(name="curate", cls=CurateCLI, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="curate")
@click.option("-v", "--verbose", count=True, help="More log output (per-record warnings, debug lines).")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors on stderr.")
def cli(verbose: int, quiet: bool) -> None:
    """curate: turn raw public text into a tokenized LLM training corpus.

    Each command is one stage. Stages read and write dataset directories of Parquet
    shards (open them with pandas.read_parquet); re-running a stage resumes it, and a
    stage whose inputs changed since its output was written starts again.
    """
    _setup_logging(verbose, quiet)


@cli.command("inspect")
@click.argument("prefix", metavar="PREFIX")
@click.option(
    "--doc", "doc", type=click.IntRange(min=0), default=None, metavar="N", help="Print document N: its token ids and decoded text."
)
@click.option(
    "--tokenizer", default=None, metavar="gpt2|PATH", help="Tokenizer to decode with [default: the one in PREFIX.stats.json, else gpt2]."
)
@click.option("--max-chars", type=click.IntRange(min=0), default=None, metavar="N", help="Print at most N characters of the document text.")
def inspect_cmd(prefix: str, doc: int | None, tokenizer: str | None, max_chars: int | None) -> None:
    """Counts, dtype and one decoded document of a Megatron indexed dataset.

    \b
    Examples:
      curate inspect out/tokenized/pile_Wikipedia
      curate inspect out/blend/blend --doc 0
    """
    from curate.inspect import inspect_lines

    for line in inspect_lines(prefix, doc=doc, tokenizer=tokenizer, max_chars=max_chars):
        click.echo(line)


@cli.command("report")
@click.argument("dirs", nargs=-1, required=True, metavar="OUT...")
@click.option("--out", "out", required=True, metavar="FILE.html", help="The HTML page to write (self-contained: charts inlined).")
@click.option("--title", default=None, help="Page title [default: curate pipeline report].")
@click.option(
    "--samples", type=click.IntRange(min=0), default=2, show_default=True, help="Rejected documents shown per removal reason and stage."
)
def report_cmd(dirs: tuple[str, ...], out: str, title: str | None, samples: int) -> None:
    """One HTML page over a pipeline run: funnel, sources, languages, quality, rules, duplicates, blend.

    OUT is a pipeline root holding one directory per stage (e.g. out/sample), or stage
    directories, or tokenized prefixes. The page is built from each stage's _SUCCESS and
    stats files, orders the stages by the inputs they read, shows a few documents of each
    stage's _rejected/ output (--keep-rejected) and loads nothing from anywhere.

    \b
    Examples:
      curate report out/sample --out out/sample/report.html
      curate report out/clean out/dedup out/tokenized --out report.html
    """  # noqa: D301
    from curate.report import write_report

    summary = write_report(list(dirs), out, title=title, samples=samples)
    click.echo(
        f"report: {len(summary['stages'])} stages ({', '.join(summary['stages'])}), {summary['charts']} charts, "
        f"{summary['bytes'] / 1e3:,.0f} kB, {summary['seconds']:.1f} s"
    )
    for p in summary["unfinished"]:
        click.echo(f"  left out (not finished): {p}")
    click.echo(f"  output: {out}")


@cli.command("stats")
@click.argument("path", metavar="DIR")
def stats_cmd(path: str) -> None:
    """One stage's summary: documents and bytes per source, removal reasons, counters.

    DIR is a stage's output directory (or a tokenized PREFIX).

    \b
    Examples:
      curate stats out/sample/clean
      curate stats out/sample/blend
    """  # noqa: D301
    from curate.report import stats_lines

    for line in stats_lines(path):
        click.echo(line)


for _name in ("inspect", "stats", "report"):
    cli.commands[_name].section = "inspect"  # type: ignore[attr-defined]
cli.order = ["inspect", "stats", "report"]


def main() -> None:
    """Console entry point."""
    cli.main()


if __name__ == "__main__":  # pragma: no cover
    main()
