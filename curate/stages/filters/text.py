"""Shared text features for the heuristic filters: words, lines, paragraphs, n-gram statistics.

Two definitions of a word. *Whitespace words* (``str.split``) are what the Gopher paper's
wording reads ("80% of words contain at least one alphabetic character": a comma is not a
word); the ``paper`` preset of ``gopher_quality`` uses them. *Tokens* (:func:`words`) are
what datatrove 0.10.1 counts (``datatrove/utils/text.py``, ``split_into_words``): the
Gopher repetition n-grams, FineWeb's words per line, and every Gopher quality ratio of the
``datatrove`` preset, so that those decisions agree with datatrove's. datatrove splits
English with spaCy's blank ``en`` tokenizer: whitespace chunks, then punctuation split off the ends of a chunk one mark
at a time, clitics (``do n't``, ``John 's``), and a few infixes (a hyphen before a letter,
``/ : = < >`` between letters, a comma between letters, a period between a lower- and an
upper-case letter, ``...``); a period stays on single letters, initialisms and common
abbreviations (``U.S.``, ``e.g.``, ``Mr.``). :func:`words` does the same with one regular
expression in C, about 10x faster than spaCy. Known differences (see the issue-4 notes):
spaCy's emoticon and unit exceptions (``:)``, ``5km``), URLs with odd punctuation, and
characters outside the mark ranges below in scripts whose marks Python does not count as
word characters.

Everything here is computed once per document and shared by the rule sets (``Doc``).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cached_property
from itertools import chain, compress
from operator import not_

import numpy as np
import pandas as pd

try:  # the compiled twin of Doc.top_ngram_chars + Doc.duplicate_ngram_chars (setup.py builds it; optional)
    from curate.stages.filters import _ngrams as _native
except ImportError:  # no C compiler at install time: the numpy code below, same results
    _native = None

#: Unicode Sentence_Terminal characters (Unicode 16), the marks that end a sentence.
STERM = (
    "\u0021\u002e\u003f\u0589\u061d-\u061f\u06d4\u0700-\u0702\u07f9\u0837\u0839\u083d-\u083e\u0964-\u0965\u104a-\u104b"
    "\u1362\u1367-\u1368\u166e\u1735-\u1736\u17d4-\u17d5\u1803\u1809\u1944-\u1945\u1aa8-\u1aab\u1b4e-\u1b4f\u1b5a-\u1b5b"
    "\u1b5e-\u1b5f\u1b7d-\u1b7f\u1c3b-\u1c3c\u1c7e-\u1c7f\u2024\u203c-\u203d\u2047-\u2049\u2cf9-\u2cfb\u2e2e\u2e3c"
    "\u2e53-\u2e54\u2e60-\u2e61\u3002\ua4ff\ua60e-\ua60f\ua6f3\ua6f7\ua876-\ua877\ua8ce-\ua8cf\ua92f\ua9c8-\ua9c9"
    "\uaa5d-\uaa5f\uaaf0-\uaaf1\uabeb\ufe12\ufe15-\ufe16\ufe52\ufe56-\ufe57\uff01\uff0e\uff1f\uff61"
    "\U00010a56-\U00010a57\U00010f55-\U00010f59\U00010f86-\U00010f89\U00011047-\U00011048\U000110be-\U000110c1"
    "\U00011141-\U00011143\U000111c5-\U000111c6\U000111cd\U000111de-\U000111df\U00011238-\U00011239"
    "\U0001123b-\U0001123c\U000112a9\U000113d4-\U000113d5\U0001144b-\U0001144c\U000115c2-\U000115c3"
    "\U000115c9-\U000115d7\U00011641-\U00011642\U0001173c-\U0001173e\U00011944\U00011946\U00011a42-\U00011a43"
    "\U00011a9b-\U00011a9c\U00011c41-\U00011c42\U00011ef7-\U00011ef8\U00011f43-\U00011f44\U00016a6e-\U00016a6f"
    "\U00016af5\U00016b37-\U00016b38\U00016b44\U00016d6e-\U00016d6f\U00016e98\U0001bc9f\U0001da88"
)


def _expand(ranges: str) -> frozenset[str]:
    out: set[str] = set()
    for m in re.finditer(r"(.)-(.)|(.)", ranges, re.S):
        if m.group(3):
            out.add(m.group(3))
        else:
            out.update(chr(c) for c in range(ord(m.group(1)), ord(m.group(2)) + 1))
    return frozenset(out)


#: The characters of :data:`STERM` as a tuple, for ``str.endswith``.
TERMINAL_PUNCTUATION: tuple[str, ...] = tuple(sorted(_expand(STERM)))

#: datatrove 0.10.1's ``TERMINAL_PUNCTUATION`` (``datatrove/utils/text.py``), which FineWeb's
#: line-punctuation rule uses: :data:`STERM` without the 16 marks below, and with three Khmer
#: signs that are not Sentence_Terminal (U+17D6, U+17D9, U+17DA).
DATATROVE_TERMINAL: tuple[str, ...] = tuple(
    sorted(
        (
            _expand(STERM)
            - _expand("\u2024\u2cf9-\u2cfb\u2e60-\u2e61\ufe12\ufe15-\ufe16\u1b4e-\u1b4f\u1b7f\U000113d4-\U000113d5\U00016d6e-\U00016d6f")
        )
        | {"\u17d6", "\u17d9", "\u17da"}
    )
)
#: spaCy 3.8's ``Sentencizer.default_punct_chars``, the sentence ends datatrove's C4 filter counts
#: with (its sentencizer): :data:`STERM` without the 44 marks below.
SPACY_SENTENCE_ENDS: frozenset[str] = frozenset(
    _expand(STERM)
    - _expand(
        "\u061d-\u061e\u0837\u0839\u083d-\u083e\u17d4-\u17d5\u1b4e-\u1b4f\u1b7d-\u1b7f\u2024\u2cf9-\u2cfb\u2e53-\u2e54"
        "\u2e60-\u2e61\ufe12\ufe15-\ufe16\U00010f55-\U00010f59\U00010f86-\U00010f89\U000113d4-\U000113d5\U00011944\U00011946"
        "\U00011ef7-\U00011ef8\U00011f43-\U00011f44\U00016d6e-\U00016d6f\U00016e98"
    )
)
#: datatrove 0.10.1's ``PUNCTUATION_SET`` (``datatrove/utils/text.py``): a token made only of these
#: is a "symbol" its Gopher quality filter leaves out of the word count and the mean word length.
#: ASCII punctuation, some typographic and CJK marks (and, as it happens, the full-width digit
#: one), C0/C1 control characters except tab and line feed, and :data:`DATATROVE_TERMINAL`. Not
#: in it: arrows, bullets (•), the degree sign, emoji, the opening single quote (‘).
DATATROVE_PUNCTUATION: frozenset[str] = frozenset(
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    "\u00ab\u00b4\u00bb\u2013\u2014\u2019\u201c\u201d\u201e\u2026\u2236\u2501\u25ba\u3001\u3002\u3008\u3009\u300a\u300b\u300c\u300d\u3010\u3011"
    "\uff01\uff05\uff08\uff09\uff0c\uff0e\uff11\uff1a\uff1b\uff1f\uff5e"
).union(map(chr, [*range(0, 9), *range(11, 32), *range(127, 160)]), DATATROVE_TERMINAL)

# Combining marks and Indic-script characters Python's \w misses (vowel signs are Mc/Mn);
# without them words in those scripts would break at every mark. Dandas (U+0964/5) are left out.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0963\u0966-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e\u0eb1-\u0ebc\u0ec8-\u0ece\u0f18-\u0f19\u0f35\u0f37\u0f39"
    "\u0f71-\u0f84\u102b-\u103e\u1ab0-\u1aff\u1dc0-\u1dff\u200c\u200d\u20d0-\u20ff\ufe00-\ufe0f\ufe20-\ufe2f"
)
_NW = rf"[^\s\w{_MARKS}]"  # a punctuation or symbol character
_L = r"[^\W\d_]"  # a letter
# Symbols spaCy splits off like punctuation (So: emoji, arrows, dingbats, box drawing, (c), degree sign).
_ICONS = "\u00a6\u00a9\u00ae\u00b0\u2100-\u214f\u2190-\u21ff\u2300-\u23ff\u2400-\u27bf\u2800-\u28ff\u2b00-\u2bff\U0001f000-\U0001faff"
_CURRENCY = "$£€¥฿₠-₿"
_PUNCT = r",:;!?¿؟¡()\[\]{}<>_#*&。？！，、；：～·।،۔؛٪…"
_QUOTES = "'\"”“`‘´’‚„»«「」『』（）〔〕【】《》〈〉⟦⟧"
# Split off the start of a chunk one at a time ("+" only when no digit follows: +5 stays).
_PREFIX = rf"[§%=—–{_PUNCT}{_QUOTES}{_CURRENCY}{_ICONS}]|\+(?!\d)"
# Split off the end of a chunk (the period is handled separately: it stays on initials; + % and
# currency signs only after a digit).
_SUFFIX = rf"[—–{_PUNCT}{_QUOTES}{_ICONS}.]"
_CLITIC = r"(?i:n['’]t|['’](?:s|re|ve|ll|d|m))(?!\w)"
# Chunk-internal characters that are split (spaCy's infixes), tested at the current position.
_INFIX = (
    rf"(?<=[^\W_])(?:-{{1,3}}|——|[–—~])(?={_L})"  # a hyphen or dash before a letter: well-known, me--you
    r"|(?<=\d)[-+*^](?=[\d-])"  # between digits: 2020-01-01, 2^3
    rf"|(?<=[^\W_])[:<>=/](?={_L})"  # x=y, a/b (not ://, not 3:30)
    rf"|(?<={_L}),(?={_L})"  # a,b (not 1,000)
    r"|(?<=[a-z])\.(?=[A-Z])"  # end.Next
    r"|\.\.|…"  # ellipses
    r"|['’](?i:s|re|ve|ll|d|m)(?!\w)"  # John's, we'd
)
# A period stays on initials (J. U.S. A.B.C.), single lower-case letters (p.) and after / = @ ... (dir/.),
# not on USA. etc. 1.2.
_UP = "A-ZÀ-ÖØ-ÞА-ЯЁΑ-Ω"  # upper-case letters (Latin-1, Cyrillic, Greek) whose initials keep a period
_LOW = "a-zäöü"  # single lower-case letters that keep a period (spaCy: a. to z., ä. ö. ü.)
_BODY_END = rf"(?:(?<!{_SUFFIX})(?<!\d[+%{_CURRENCY}])|(?<=(?<![{_UP}])[{_UP}]\.)|(?<=(?<![\w.])[{_LOW}]\.)|(?<=[/=@$^~|\\]\.))"
# Runs are possessive and underscores single, so giving back a trailing mark is one step (no
# exponential backtracking on '|_____').
_BODY = rf"(?:(?:[^\W_]|[{_MARKS}])++|_|(?!{_INFIX}){_NW})+{_BODY_END}"
# With apostrophes about: a word stops before n't (don't -> do n't).
_BODY_CLITIC = rf"(?:(?:(?:[^\W_]|[{_MARKS}])(?!['’]t(?!\w)))++|_|(?!{_INFIX}){_NW})+{_BODY_END}"
# Titles, months and US states that keep their period, and e.g. i.e. a.m. p.m. (spaCy's exceptions).
_ABBREV = (
    r"(?<![\w.])(?:A(?:dm|k|la|pr|riz|rk|ug)|Bros|C(?:alif|o|olo|onn|orp)|D(?:ec|el|r|\.C)|F(?:eb|la)|G(?:a|en|ov)"
    r"|I(?:a|d|ll|nc|nd)|J(?:an|r|ul|un)|K(?:an|ans|y)|L(?:a|td)|M(?:ar|ass|d|essrs|ich|inn|iss|o|ont|r|rs|s|t)"
    r"|N(?:eb|ebr|ev|ov|\.[CDHJMY])|O(?:ct|kla|re)|P(?:a|h\.D|rof)|Re[pv]|S(?:en|ep|ept|t|\.C)|Tenn|Va|W(?:ash|is)"
    r"|co|vs|v\.s|[eE]\.[gG]|[iI]\.[eE]|[ap]\.m)\.(?!\w)"
)
# A URL keeps everything up to closing punctuation at its end; a period after "/" stays (spaCy).
_URL = rf"(?:(?=[a-zA-Z][a-zA-Z0-9+.-]*+://)[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)[^\s<>\"'\[\]{{}}]*(?:(?<!{_SUFFIX})|(?<=/\.))"
_EMAIL = r"[\w.+-]+@\w[\w-]*(?:\.\w[\w-]*)+"
# A whole chunk that is a dotted name ending in a lower-case part stays whole (spaCy's URL match):
# pre-commit.ci, foo.Bar.baz.
_HOST = rf"(?<![\w.-])\w+(?:[.-]\w+)*\.[a-z]{{2,63}}(?={_SUFFIX}*+(?:\s|\Z))"
# Dashes between words: me--you -> me -- you
_DASHES = rf"(?<=[^\W_])(?:-{{2,3}}|——)(?={_L})"
# Words spaCy keeps with a leading apostrophe
_APOS_WORDS = r"(?<![\w'’])['’](?:em|cause|bout|nuff)(?!\w)"
# Emoticons and the other tokens spaCy merges back from punctuation: ): :* 8) '' :-)
_EMOTICON = (
    r"(?=[:;=()\[\]<>8'^_.xXoOa-])(?:(?:''|\):|\(:|:-?[()*/|\]}>03]|;-?\)|=[()/|\]\[3]|[\[(]=|\]=|[\[(]-?:|8-?\)|<3+|</3"
    r"|\^_+\^|-_+-|>\.[<>]|<\.<|\._\.)(?![\w.])|(?<!\w)(?::-?[DPpOoXx]|;-?D|[xX]DD?|8-?D|[oO][._][oO0]|0[._][0oO]|and/or)(?!\w))"
)
# A number before a unit at the end of a chunk: 5km -> 5 km, 100% -> 100 %, 5pm -> 5 pm.
_UNITS = r"km|km/h|kmh|kg|mg|µg|cm|mm|µm|nm|dm|ha|yd|ft|in|lb|oz|mph|m/s|hPa|Pa|mbar|mb|MB|kb|KB|gb|GB|tb|TB|am|pm|[mgtTGMK%]"
_NUMBER_UNIT = rf"(?<![\w.])\d+(?:[.,]\d+)*(?=(?:{_UNITS}){_SUFFIX}*(?!\S))"
# The common case first: a word of letters (or a number) followed by whitespace, or by closing
# punctuation and whitespace, needs none of the alternatives after it.
_FAST = (
    r"(?:[^\W\d_][^\W_]*+|(?!8\))\d++)(?=[,;:!?\")\]]*+(?:\s|\Z))"
    # ... and a lower-case word or a number before a period, which spaCy splits off (not co. vs.)
    r"|(?:[a-z]++(?<=[a-z]{2})(?<!\bco)(?<!\bvs)|\d++)(?=\.[.,;:!?\")\]]*+(?:\s|\Z))"
)
# Closing punctuation at the end of a chunk: one token per mark.
_PUNCT_END = r"[,;:!?\")\].](?=[,;:!?\")\].]*+(?:\s|\Z))"
_EMAIL_G = rf"(?=[\w.+-]++@){_EMAIL}"
_HOST_G = rf"(?=\w++[.-]){_HOST}"
_ABBREV_G = rf"(?=[A-Zacveip][\w.]{{0,6}}\.){_ABBREV}"
_NUMBER_UNIT_G = rf"(?=\d){_NUMBER_UNIT}"
_TAIL = rf"{_URL}|{_EMAIL_G}|{_HOST_G}|{_ABBREV_G}|{_NUMBER_UNIT_G}|{_DASHES}"
_WORD_RE = re.compile(rf"{_FAST}|{_EMOTICON}|\.\.+|{_PUNCT_END}|{_APOS_WORDS}|{_PREFIX}|{_TAIL}|{_BODY}|\S")
_WORD_RE_CLITIC = re.compile(rf"{_FAST}|(?<=\w){_CLITIC}|{_EMOTICON}|\.\.+|{_PUNCT_END}|{_APOS_WORDS}|{_PREFIX}|{_TAIL}|{_BODY_CLITIC}|\S")
# Contractions written without an apostrophe, split like spaCy's exceptions (cannot -> can not).
_CONTRACTIONS = (
    "ai+nt are+nt can+not ca+nt ca+nt+ve could+nt could+nt+ve could+ve dare+nt did+nt did+nt+ve does+nt does+nt+ve do+nt "
    "do+nt+ve gon+na got+ta had+nt had+nt+ve has+nt have+nt he+d he+d+ve he+ll+ve he+s how+d how+d+ve how+ll how+ll+ve "
    "how+re how+s how+ve i+d i+d+ve i+ll+ve i+m i+m+a is+nt it+d it+d+ve it+ll it+ll+ve i+ve may+nt may+nt+ve might+nt "
    "might+nt+ve might+ve must+nt must+nt+ve must+ve need+nt need+nt+ve not+ve ought+nt ought+nt+ve sha+nt sha+nt+ve "
    "she+d+ve she+ll+ve she+s should+nt should+nt+ve should+ve that+d that+d+ve that+ll that+ll+ve that+s there+d "
    "there+d+ve there+ll there+ll+ve there+re there+s there+ve these+d these+d+ve these+ll these+ll+ve these+re these+ve "
    "they+d they+d+ve they+ll they+ll+ve they+re they+ve this+d this+d+ve this+ll this+ll+ve this+s those+d those+d+ve "
    "those+ll those+ll+ve those+re those+ve was+nt we+d we+d+ve we+ll+ve were+nt we+ve what+d what+d+ve what+ll "
    "what+ll+ve what+re what+s what+ve when+d when+d+ve when+ll when+ll+ve when+re when+s when+ve where+d where+d+ve "
    "where+ll where+ll+ve where+re where+s where+ve who+d who+d+ve who+ll who+ll+ve who+s who+ve why+d why+d+ve why+ll "
    "why+ll+ve why+re why+s why+ve wo+nt wo+nt+ve would+nt would+nt+ve would+ve y+all you+d you+d+ve you+ll you+ll+ve "
    "you+re you+ve"
)
_SPLITS: dict[str, tuple[str, ...]] = {}
for _c in _CONTRACTIONS.split():
    _parts = tuple(_c.split("+"))
    _SPLITS["".join(_parts)] = _parts
    _SPLITS["".join(_parts).capitalize()] = (_parts[0].capitalize(), *_parts[1:])
_SPLIT_KEYS = frozenset(_SPLITS)


_INFIX_TOKENS = frozenset("- – — ~ /".split())


def chunk_words(chunk: str) -> list[str]:
    """The tokens of one whitespace-free chunk (the regular expression; :func:`words` caches it)."""
    rx = _WORD_RE_CLITIC if ("'" in chunk or "’" in chunk) else _WORD_RE
    toks = rx.findall(chunk)
    if _SPLIT_KEYS.isdisjoint(toks):
        return toks
    # cannot -> can not, for a whole word; not after an infix split (secret-id, user/id stay)
    out: list[str] = []
    prev = ""
    for t in toks:
        parts = _SPLITS.get(t)
        if parts is not None and prev not in _INFIX_TOKENS:
            out.extend(parts)
        else:
            out.append(t)
        prev = t
    return out


class _ChunkCache(dict):
    """Whitespace chunk -> its tokens, filled on a miss. Web text repeats its chunks ("the",
    "said,", "2020."), so most lookups are one dict access in C instead of a regex match."""

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        toks = chunk_words(chunk)
        value = (chunk,) if len(toks) == 1 else tuple(toks)  # one token: the chunk itself, no second string
        self[chunk] = value
        return value


_CHUNKS = _ChunkCache()
#: entries kept before the cache starts again (about 20 MB); any size gives the same tokens
CHUNK_CACHE_ENTRIES = 100_000


def words(text: str) -> list[str]:
    """Split ``text`` into words and punctuation tokens the way spaCy's English tokenizer does.

    spaCy splits at whitespace first and tokenizes each chunk on its own (special cases such as
    ``cannot`` apply to a chunk), and so does this: no pattern of the regular expression spans
    or looks across whitespace, so a chunk's tokens do not depend on its neighbours and are
    cached per chunk.
    """
    if len(_CHUNKS) > CHUNK_CACHE_ENTRIES:
        _CHUNKS.clear()
    return list(chain.from_iterable(map(_CHUNKS.__getitem__, text.split())))


def _has_letter(token: str) -> bool:
    """A character of ``token`` is alphabetic (``str.isalpha``: Unicode L*, as datatrove counts)."""
    return any(c.isalpha() for c in token)


def _is_datatrove_symbol(token: str) -> bool:
    """A token made only of datatrove's punctuation (its Gopher filter's "symbol" words)."""
    return DATATROVE_PUNCTUATION.issuperset(token)


# Polynomial hashing mod 2^64 of concatenated words (an odd base and its inverse), and a
# multiplier that mixes a length into a hash.
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)
_HASH_INV = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))
_HASH_MIX = np.uint64(0xFF51AFD7ED558CCD)

_PARAGRAPH_SPLIT = re.compile(r"\n{2,}")
_LINE_SPLIT = re.compile(r"\n+")


class Doc:
    """Features of one document's text, each computed on first use and then shared by the rules."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def lines(self) -> list[str]:
        """``str.splitlines()``: every line, blank ones included."""
        return self.text.splitlines()

    @cached_property
    def nonblank_lines(self) -> list[str]:
        """Lines split on ``\\n`` only, without the whitespace-only ones (FineWeb)."""
        return [ln for ln in self.text.split("\n") if ln.strip()]

    @cached_property
    def _token_classes(self) -> tuple[int, int, int]:
        """``(symbol tokens, their characters, tokens with a letter)``; a symbol token is made only
        of :data:`DATATROVE_PUNCTUATION` (datatrove's ``non_symbol_words`` are the others).

        Most tokens are purely alphabetic (``str.isalpha`` in C); only the others are looked at,
        once per distinct token.
        """
        words = self.words
        n_alpha = sum(map(str.isalpha, words))
        if n_alpha == len(words):
            return 0, 0, n_alpha
        others = Counter(compress(words, map(not_, map(str.isalpha, words))))
        n_sym = sym_chars = 0
        for tok, k in others.items():
            if _has_letter(tok):
                n_alpha += k
            elif _is_datatrove_symbol(tok):
                n_sym += k
                sym_chars += k * len(tok)
        return n_sym, sym_chars, n_alpha

    @property
    def symbol_stats(self) -> tuple[int, int]:
        """``(characters, number)`` of symbol tokens (made only of datatrove's punctuation)."""
        n_sym, sym_chars, _ = self._token_classes
        return sym_chars, n_sym

    @property
    def alpha_words(self) -> int:
        """Tokens with at least one letter."""
        return self._token_classes[2]

    @cached_property
    def spaces_words(self) -> list[str]:
        """Whitespace-separated words (``str.split()``)."""
        return self.text.split()

    @cached_property
    def spaces_stats(self) -> tuple[int, int, int]:
        """``(words, their characters, words with a letter)`` of the whitespace-separated words."""
        ws = self.spaces_words
        flags = list(map(str.isalpha, ws))
        n_alpha = sum(flags)
        if n_alpha < len(ws):
            for tok, k in Counter(compress(ws, map(not_, flags))).items():
                if _has_letter(tok):
                    n_alpha += k
        return len(ws), sum(map(len, ws)), n_alpha

    @cached_property
    def total_word_chars(self) -> int:
        return sum(map(len, self.words))

    @cached_property
    def _word_factors(self) -> tuple[np.ndarray, list[str]]:
        if not self.words:
            return np.zeros(0, dtype=np.int64), []
        ids, uniques = pd.factorize(np.array(self.words, dtype=object))
        return ids.astype(np.int64, copy=False), list(uniques)

    @property
    def word_ids(self) -> np.ndarray:
        """Each word as a small integer (equal words, equal ids)."""
        return self._word_factors[0]

    @property
    def word_uniques(self) -> list[str]:
        """The distinct words, in the order of their ids."""
        return self._word_factors[1]

    @cached_property
    def length_cumsum(self) -> np.ndarray:
        """``c[i]`` = characters of the first ``i`` words (for n-gram character counts)."""
        c = np.zeros(len(self.words) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, self.words), dtype=np.int64, count=len(self.words)), out=c[1:])
        return c

    def ngram_codes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact n-gram classes: ``(class per start position, count per class)``.

        Classes are numbered in order of first appearance (so the first of equally frequent
        n-grams has the lowest number) and built incrementally, (n-1)-gram class x next word ->
        n-gram class, with a hash table: no collisions, O(words) per n.
        """
        cache = self.__dict__.setdefault("_ngrams", {})
        if n in cache:
            return cache[n]
        ids = self.word_ids
        m = len(ids) - n + 1
        if m <= 0:
            cache[n] = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
            return cache[n]
        if n == 1:
            codes = ids
        else:
            prev = self.ngram_codes(n - 1)[0]
            codes = pd.factorize(prev[:m] * (int(ids.max()) + 1) + ids[n - 1 :])[0].astype(np.int64, copy=False)
        cache[n] = (codes, np.bincount(codes))
        return cache[n]

    def repetition(self, tops: range, dups: range, joined: bool) -> tuple[int, ...]:
        """:meth:`top_ngram_chars` for each n of ``tops``, then :meth:`duplicate_ngram_chars` for
        each n of ``dups``: in one pass of the compiled kernel where it is built."""
        if _native is not None and tops.step == dups.step == 1 and len(tops) and len(dups):
            return _native.repetition_stats(self.words, tops.start, tops.stop - 1, dups.start, dups.stop - 1, joined)
        return (*(self.top_ngram_chars(n) for n in tops), *(self.duplicate_ngram_chars(n, joined) for n in dups))

    def top_ngram_chars(self, n: int) -> int:
        """Characters of the most frequent n-gram (words joined by spaces) times its count.

        Among n-grams of equal count, the one that appears first in the document counts.
        """
        codes, counts = self.ngram_codes(n)
        if len(counts) == 0:
            return 0
        g = int(counts.argmax())
        start = int(np.argmax(codes == g))
        c = self.length_cumsum
        return int(c[start + n] - c[start] + n - 1) * int(counts[g])

    @cached_property
    def _joined_prefix(self) -> tuple[np.ndarray, np.ndarray]:
        """``(D, P)`` for hashes of word runs concatenated: the polynomial hash (mod 2^64) of the
        characters of words ``i .. k-1`` run together is ``P[k] * (D[k] - D[i])``."""
        uniques = self.word_uniques
        c = self.length_cumsum
        with np.errstate(over="ignore"):
            # each distinct word's own hash, from the characters of all of them at once
            chars = np.frombuffer("".join(uniques).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
            ends = np.cumsum(np.fromiter(map(len, uniques), dtype=np.int64, count=len(uniques)))
            inv = np.full(len(chars), _HASH_INV, dtype=np.uint64)
            inv[0] = 1
            acc = np.zeros(len(chars) + 1, dtype=np.uint64)
            np.cumsum(chars * np.cumprod(inv), out=acc[1:])  # sum of char * INV^position
            starts = np.concatenate(([0], ends[:-1]))
            own = (acc[ends] - acc[starts]) * np.power(_HASH_BASE, (ends - 1).astype(np.uint64))
            d = np.zeros(len(self.words) + 1, dtype=np.uint64)
            np.cumsum(own[self.word_ids] * np.power(_HASH_INV, c[1:].astype(np.uint64)), out=d[1:])
            return d, np.power(_HASH_BASE, c.astype(np.uint64))

    def joined_ngram_codes(self, n: int) -> np.ndarray:
        """Class per start position of the n-grams compared as their words concatenated without a
        separator (datatrove's ``find_all_duplicate``: ``gtcfpl yffg`` equals ``gtcfp lyffg``).

        By a hash of the concatenated characters and their number; among the n-grams whose
        hashes repeat the strings themselves decide, so the classes are exact.
        """
        cache = self.__dict__.setdefault("_joined", {})
        if n in cache:
            return cache[n]
        m = len(self.words) - n + 1
        if m <= 0:
            cache[n] = np.zeros(0, dtype=np.int64)
            return cache[n]
        d, p = self._joined_prefix
        c = self.length_cumsum
        with np.errstate(over="ignore"):
            key = (d[n:] - d[:m]) * p[n:] ^ (c[n:] - c[:m]).astype(np.uint64) * _HASH_MIX
        codes = pd.factorize(key)[0].astype(np.int64, copy=False)
        repeated = np.flatnonzero(np.bincount(codes)[codes] > 1)
        if len(repeated):
            # the strings decide among the n-grams whose hashes repeat (few)
            s = "".join(self.words)
            exact = [s[a:b] for a, b in zip(c[repeated].tolist(), c[repeated + n].tolist())]
            ids: dict[str, int] = {}
            codes = codes.copy()
            codes[repeated] = np.fromiter((ids.setdefault(x, len(ids)) for x in exact), np.int64, len(exact)) + len(codes)
        cache[n] = codes
        return codes

    def duplicate_ngram_chars(self, n: int, joined: bool = False) -> int:
        """Characters in duplicated n-grams (words concatenated), counted without overlaps.

        Scans left to right; an n-gram seen before at a scanned position counts and the scan
        jumps past it (the Gopher definition as datatrove implements it). Only positions whose
        n-gram occurs twice or more can matter, so the loop runs over those alone; and without
        a repeated (n-1)-gram there is no repeated n-gram. With ``joined`` two n-grams are equal
        when their words concatenated are (datatrove 0.10.1), not only when their words are.
        """
        if joined:
            codes = self.joined_ngram_codes(n)
            counts = np.bincount(codes)
        else:
            none = self.__dict__.setdefault("_no_repeats", set())
            if n in none or (n - 1) in none:
                none.add(n)
                return 0
            codes, counts = self.ngram_codes(n)
            if len(counts) == 0 or counts.max() < 2:
                none.add(n)
                return 0
        if len(counts) == 0 or counts.max() < 2:
            return 0
        repeated = np.flatnonzero(counts[codes] > 1)
        c = self.length_cumsum
        seen: set[int] = set()
        total = 0
        skip_until = -1
        for p, g in zip(repeated.tolist(), codes[repeated].tolist()):
            if p < skip_until:
                continue
            if g in seen:
                total += int(c[p + n] - c[p])
                skip_until = p + n
            else:
                seen.add(g)
        return total

    def replace_text(self, text: str) -> None:
        """Set new text (a rule removed lines) and forget every feature computed from the old one."""
        self.__dict__.clear()
        self.text = text


def paragraphs(text: str) -> list[str]:
    """Paragraphs: the stripped text split at two or more newlines."""
    return _PARAGRAPH_SPLIT.split(text.strip())


def line_runs(text: str) -> list[str]:
    """Lines split at runs of newlines (Gopher repetition; the text is not stripped)."""
    return _LINE_SPLIT.split(text)


def duplicates(items: list[str]) -> tuple[int, int]:
    """``(number, characters)`` of the items equal to an earlier item."""
    seen: set[str] = set()
    n = chars = 0
    for x in items:
        if x in seen:
            n += 1
            chars += len(x)
        else:
            seen.add(x)
    return n, chars
