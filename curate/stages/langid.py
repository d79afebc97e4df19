"""Language identification with fastText (the ``langid`` stage).

Each document's text, with line breaks folded into spaces and long text sampled to a bounded
length (the first ``max_chars / 2`` characters and as many from the middle, cut at spaces), is
given to a fastText language-ID model: ``lid.176.ftz`` shipped in ``curate/resources/`` by
default, or any fastText model with ``__label__xx`` labels (``lid.176.bin``, GlotLID's
``__label__eng_Latn``). ``lang`` is the model's label without ``__label__`` and ``lang_score``
its probability. A document is kept when its language is one of ``keep`` with a score of at
least ``min_score``; ``keep=None`` annotates every document and drops none.

``keep`` codes match labels of either style: ``en`` matches ``en``, ``eng`` and ``eng_Latn``
(ISO 639-1 and 639-3 are interchangeable, and a label's script suffix is ignored), a
macrolanguage matches its main member (``zh`` and ``cmn_Hani``, ``ar`` and ``arb_Arab``), and
an exact label (``eng_Latn``, ``sr_Cyrl``) matches itself. Text without any letter (empty,
digits, punctuation) is not given to the model: it gets ``lang = "und"`` and score 0.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from curate.errors import CurateError, ParamError
from curate.fasttext import Classifier, classifier
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param
from curate.schema import source_matcher
from curate.storage import file_sha256

DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "resources" / "lid.176.ftz"
DEFAULT_MODEL_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"
UNDETERMINED = "und"
_LABEL = "__label__"
_LETTER = re.compile(r"[^\W\d_]")
_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")
_SCORE_BUCKETS = [f"{i / 10:.1f}" for i in range(10)]

# ISO 639-1 -> 639-3 (the 639-2/T code where the two differ), for every 639-1 code.
_ISO1_TO_3 = dict(
    pair.split(":")
    for pair in (
        "aa:aar ab:abk ae:ave af:afr ak:aka am:amh an:arg ar:ara as:asm av:ava ay:aym az:aze ba:bak be:bel bg:bul "
        "bh:bih bi:bis bm:bam bn:ben bo:bod br:bre bs:bos ca:cat ce:che ch:cha co:cos cr:cre cs:ces cu:chu cv:chv "
        "cy:cym da:dan de:deu dv:div dz:dzo ee:ewe el:ell en:eng eo:epo es:spa et:est eu:eus fa:fas ff:ful fi:fin "
        "fj:fij fo:fao fr:fra fy:fry ga:gle gd:gla gl:glg gn:grn gu:guj gv:glv ha:hau he:heb hi:hin ho:hmo hr:hrv "
        "ht:hat hu:hun hy:hye hz:her ia:ina id:ind ie:ile ig:ibo ii:iii ik:ipk io:ido is:isl it:ita iu:iku ja:jpn "
        "jv:jav ka:kat kg:kon ki:kik kj:kua kk:kaz kl:kal km:khm kn:kan ko:kor kr:kau ks:kas ku:kur kv:kom kw:cor "
        "ky:kir la:lat lb:ltz lg:lug li:lim ln:lin lo:lao lt:lit lu:lub lv:lav mg:mlg mh:mah mi:mri mk:mkd ml:mal "
        "mn:mon mr:mar ms:msa mt:mlt my:mya na:nau nb:nob nd:nde ne:nep ng:ndo nl:nld nn:nno no:nor nr:nbl nv:nav "
        "ny:nya oc:oci oj:oji om:orm or:ori os:oss pa:pan pi:pli pl:pol ps:pus pt:por qu:que rm:roh rn:run ro:ron "
        "ru:rus rw:kin sa:san sc:srd sd:snd se:sme sg:sag si:sin sk:slk sl:slv sm:smo sn:sna so:som sq:sqi sr:srp "
        "ss:ssw st:sot su:sun sv:swe sw:swa ta:tam te:tel tg:tgk th:tha ti:tir tk:tuk tl:tgl tn:tsn to:ton tr:tur "
        "ts:tso tt:tat tw:twi ty:tah ug:uig uk:ukr ur:urd uz:uzb ve:ven vi:vie vo:vol wa:wln wo:wol xh:xho yi:yid "
        "yo:yor za:zha zh:zho zu:zul"
    ).split()
)
# Macrolanguages and the member a language-ID model usually reports (GlotLID uses members).
_MEMBERS = {
    "ara": ("arb",), "aze": ("azj",), "est": ("ekk",), "fas": ("pes",), "grn": ("gug",), "kur": ("kmr",),
    "lav": ("lvs",), "mlg": ("plt",), "mon": ("khk",), "msa": ("zsm",), "nep": ("npi",), "nor": ("nob",),
    "ori": ("ory",), "orm": ("gaz",), "pus": ("pbt",), "que": ("quy",), "swa": ("swh",), "uzb": ("uzn",),
    "yid": ("ydd",), "zho": ("cmn",), "tgl": ("fil",), "ful": ("fuv",), "kau": ("knc",),
}  # fmt: skip


def _code_group(code: str) -> set[str]:
    """Every spelling of one language: ``en`` -> {en, eng}; ``zh`` -> {zh, zho, cmn}."""
    code = code.strip()
    group = {code}
    three = _ISO1_TO_3.get(code, code)
    group.add(three)
    for two, t in _ISO1_TO_3.items():
        if t == three:
            group.add(two)
    for macro, members in _MEMBERS.items():
        if three == macro or three in members:
            group.update({macro, *members})
            group.update(two for two, t in _ISO1_TO_3.items() if t == macro)
    return group


@functools.lru_cache(maxsize=4)
def load_model(path: str) -> Classifier:
    """The language-ID classifier at ``path``, once per process; the shipped model's sha256 is checked first.

    :mod:`curate.fasttext` reads and checks the file and predicts (its compiled kernel where it
    runs the model, the fastText library otherwise; ``CURATE_FASTTEXT=library`` forces the library).
    """
    p = Path(path)
    if not p.is_file():
        raise CurateError(f"{p}: no such language-ID model file")
    if p.resolve() == DEFAULT_MODEL:
        digest = file_sha256(p)
        if digest != DEFAULT_MODEL_SHA256:
            raise CurateError(
                f"{p}: sha256 {digest[:12]}... is not the shipped lid.176.ftz ({DEFAULT_MODEL_SHA256[:12]}...); reinstall curate"
            )
    model = classifier(str(p))
    labels = model.info.labels
    if not labels or not all(str(lab).startswith(_LABEL) for lab in labels[:5]):
        raise CurateError(f"{p}: a fastText model, but not a classifier with __label__ labels (is it a word-vector model?)")
    return model


def sample_text(text: str, max_chars: int) -> str:
    """At most ``max_chars``: the beginning and a piece of the middle, each cut at a space, newlines folded."""
    if len(text) > max_chars:
        half = max_chars // 2
        head = text[:half]
        cut = head.rfind(" ", half // 2)
        head = head[:cut] if cut > 0 else head
        mid = len(text) // 2
        start = text.find(" ", mid, mid + half // 2)
        start = start + 1 if start >= 0 else mid
        body = text[start : start + half]
        cut = body.rfind(" ", half // 2)
        text = head + " " + (body[:cut] if cut > 0 else body)
    if "\n" in text:  # the one character fastText's predict refuses; it splits on \r \t \v \f itself
        text = text.replace("\n", " ")
    if not text.isascii():
        for sep in _UNICODE_BREAKS:
            if sep in text:
                text = text.replace(sep, " ")
    return text


@stage("langid", section="clean", order=20)
@dataclass
class LangIdStage(DocStage):
    """Identify each document's language with fastText; keep the wanted ones (reason `lang`).

    Writes `lang` (the model's label without __label__, e.g. en or eng_Latn) and
    `lang_score`. Text without letters gets lang `und`, score 0. Bytes that are not valid
    UTF-8 (a Parquet file from elsewhere) are replaced with U+FFFD when read and counted
    (invalid_utf8_repaired).

    \b
    Example:
      curate langid --in out/clean --out out/langid --keep en --filter-sources 'cc/*'
      curate langid --in out/clean --out out/langid_all --keep all
      curate langid --in out/clean --out out/langid_de --keep de,en --model glotlid/model.bin
    """

    name: ClassVar[str] = "langid"
    error_reasons: ClassVar[frozenset[str]] = frozenset({"invalid_utf8"})
    invalid_utf8: ClassVar[str] = "reject"
    sections: ClassVar[dict[str, str]] = {"languages": "counters.lang", "language_scores": "counters.score"}
    keep: list[str] = param(["en"], "Language to keep (repeatable or comma-separated; en matches en, eng and eng_Latn); "
                            "'all' annotates without dropping.", metavar="LANG", multiple=True, split=True)  # fmt: skip
    min_score: float = param(0.65, "Keep a document only when its language's score is at least this.", min=0.0, max=1.0)
    model: str | None = param(None, "A fastText language-ID model (lid.176.bin, GlotLID model.bin, ...) [default: the shipped lid.176.ftz].",
                              metavar="PATH")  # fmt: skip
    max_chars: int = param(4000, "Longer text is sampled to this many characters (its start and middle) before prediction.", min=100)
    filter_sources: str | None = param(None, "Drop only documents of these sources (e.g. 'cc/*'); the others are annotated and kept.",
                                       metavar="GLOBS")  # fmt: skip

    def __post_init__(self) -> None:
        if isinstance(self.keep, str):
            self.keep = [self.keep]
        codes = [c.strip() for k in (self.keep or []) for c in str(k).split(",") if c.strip()]
        if self.keep is not None and not codes:
            raise ParamError("--keep", "give at least one language, or 'all'")
        if "all" in codes and len(codes) > 1:
            raise ParamError("--keep", "'all' cannot be combined with languages")
        self.keep = None if codes == ["all"] or self.keep is None else codes
        if isinstance(self.filter_sources, list):
            self.filter_sources = ",".join(self.filter_sources)
        if not 0.0 <= self.min_score <= 1.0:
            raise CurateError(f"--min-score must be between 0 and 1, got {self.min_score}")
        if self.max_chars < 100:
            raise CurateError(f"--max-chars must be at least 100, got {self.max_chars}")
        self.model_path = str(Path(self.model).expanduser().absolute()) if self.model else str(DEFAULT_MODEL)
        if not Path(self.model_path).is_file():
            raise CurateError(f"{self.model_path}: no such language-ID model file")
        self._keep = set().union(*(_code_group(c) for c in self.keep)) if self.keep else None

    def derived_params(self) -> dict[str, Any]:
        """The model by content (and the shipped one by name, wherever curate is installed); keep as a set."""
        shipped = Path(self.model_path).resolve() == DEFAULT_MODEL
        return {
            "keep": sorted(self.keep) if self.keep else None,
            "model": "lid.176.ftz (shipped)" if shipped else self.model_path,
            "model_sha256": DEFAULT_MODEL_SHA256 if shipped else file_sha256(Path(self.model_path)),
            "filter_sources": [self.filter_sources] if self.filter_sources else None,
        }

    def wanted(self, lang: str) -> bool:
        """Whether a label (``en``, ``eng_Latn``) is one of ``keep``."""
        if self._keep is None:
            return True
        return lang in self._keep or lang.split("_", 1)[0] in self._keep

    def predict(self, texts: list[str]) -> tuple[list[str], list[float]]:
        """``(labels, scores)`` for texts; no-letter texts get ``und`` and 0.0 without asking the model."""
        samples = [sample_text(t, self.max_chars) for t in texts]
        ask = [i for i, s in enumerate(samples) if _LETTER.search(s)]
        langs = [UNDETERMINED] * len(texts)
        scores = [0.0] * len(texts)
        if ask:
            labels, probs = load_model(self.model_path).top1([samples[i] for i in ask])  # fastText's, by curate's kernel where it can
            for i, lab, p in zip(ask, labels, probs):
                langs[i] = lab[len(_LABEL) :] if lab else UNDETERMINED
                scores[i] = min(1.0, p)
        return langs, scores

    def decide_batch(self, batch: Batch) -> Decisions:
        texts = batch.texts
        langs, scores = self.predict(texts)
        filt = source_matcher([self.filter_sources]) if self.filter_sources else None
        sources = batch.column("source") if filt else None
        reasons: list[str | None] = []
        counters = Counters(lang={}, score=dict.fromkeys(_SCORE_BUCKETS, 0))
        for i, (lang, score) in enumerate(zip(langs, scores)):
            counters.add("lang", lang)
            counters.add("score", _SCORE_BUCKETS[min(9, int(score * 10))])
            if lang == UNDETERMINED:
                counters.add("no_letters")
            if len(texts[i]) > self.max_chars:
                counters.add("sampled")
            drop = self._keep is not None and not (self.wanted(lang) and score >= self.min_score)
            if drop and filt is not None and not filt(sources[i]):  # type: ignore[index]
                drop = False
                counters.add("kept_unfiltered_source")
            reasons.append("lang" if drop else None)
        columns = {"lang": pa.array(langs, pa.string()), "lang_score": pa.array(scores, pa.float32())}
        return Decisions(reasons, columns=columns, counters=counters)
