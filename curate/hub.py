"""The Hugging Face hub: fail fast when it cannot be reached.

``datasets`` retries an unreachable hub for about 25 seconds, printing a warning per retry,
before it gives up; a host name that does not resolve is known at once.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

from curate.errors import CurateError


def offline() -> bool:
    """True when the user asked for the datasets cache only (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)."""
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def check_hub_reachable(what: str, instead: str) -> None:
    """Raise a one-line CurateError when the hub's host (HF_ENDPOINT) does not resolve."""
    if offline():
        return
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlparse(endpoint).hostname or endpoint
    try:
        socket.getaddrinfo(host, 443)
    except OSError as exc:
        raise CurateError(
            f"{what}: cannot reach the hub at {host} ({exc.strerror or exc}); {instead}, or set HF_HUB_OFFLINE=1 to use the datasets cache"
        ) from exc
