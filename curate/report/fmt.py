"""How numbers are written on the page and in ``curate stats``."""

from __future__ import annotations

from typing import Any


def fmt_int(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.1f}"
    return f"{int(x):,}"


def fmt_bytes(x: Any) -> str:
    if x is None:
        return "—"
    x = float(x)
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= div:
            return f"{x / div:,.1f} {unit}"
    return f"{int(x):,} B"


def fmt_pct(x: Any) -> str:
    return "—" if x is None else f"{100.0 * float(x):.1f}%"


def fmt_short(x: float) -> str:
    """1.2M, 34.5k: for chart labels."""
    x = float(x)
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.1f}{unit}"
    return f"{x:.0f}"


def fmt_count(x: float) -> str:
    """1,952 below 100,000; 1.2M above: for chart labels."""
    return f"{x:,.0f}" if abs(x) < 1e5 else fmt_short(x)


def fmt_value(v: Any) -> str:
    """A counter's value: numbers with thousands separators, anything else as text."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return fmt_int(v) if isinstance(v, int) or float(v).is_integer() else f"{v:,.3f}"


FORMATS = {
    "int": fmt_int,
    "bytes": fmt_bytes,
    "pct": fmt_pct,
    "float": lambda x: "—" if x is None else f"{float(x):.3f}",
    "weight": lambda x: "—" if x is None else f"{100.0 * float(x):.2f}%",
    "epochs": lambda x: "—" if x is None else f"{float(x):.2f}",
    "sec": lambda x: "—" if x is None else f"{float(x):,.1f} s",
}


def num(x: Any) -> float:
    """A number from a record (0 for anything else)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def ratio(a: Any, b: Any) -> float | None:
    a, b = (getattr(a, "value", a)), (getattr(b, "value", b))
    if a is None or not b:
        return None
    return float(a) / float(b)
