"""What pages are made of: the page mix, languages and charsets, UI strings in 11 languages, names and word lists."""

from __future__ import annotations

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
