/* Word n-gram shingle hashes of a batch of documents in one pass over their bytes.
 *
 * The compiled twin of curate.dedup.minhash.word_hashes + shingle_hashes (the numpy
 * reference, which tests hold it equal to). Words are the runs of word bytes: ASCII letters
 * and digits, and the non-ASCII bytes the caller marks (hi_word: one flag per byte >= 0x80,
 * in order). ASCII letters are lowercased as they are read; the caller lowercases
 * documents with non-ASCII characters. Each word is hashed exactly as the numpy code does
 * (its length and its bytes read 8 at a time, little-endian; words over 64 bytes by their
 * first 64 and last 8 bytes, each step mixed with splitmix64's finaliser); n consecutive
 * word hashes are combined polynomially and mixed. Needs only Python.h: buffers in, a
 * count out, no numpy C API.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define M1 0x9E3779B97F4A7C15ULL
#define M2 0xBF58476D1CE4E5B9ULL
#define M3 0x94D049BB133111EBULL
#define WORD_CHUNKS 8 /* words are hashed on their first 64 bytes, their last 8 and their length */

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= M2;
    x ^= x >> 27;
    x *= M3;
    x ^= x >> 31;
    return x;
}

/* ASCII A-Z -> a-z in each byte of v (SWAR); other bytes, including those >= 0x80, unchanged */
static inline uint64_t ascii_lower8(uint64_t v) {
    uint64_t low7 = v & 0x7F7F7F7F7F7F7F7FULL;
    uint64_t ge_a = low7 + 0x3F3F3F3F3F3F3F3FULL; /* high bit: low7 >= 'A' */
    uint64_t gt_z = low7 + 0x2525252525252525ULL; /* high bit: low7 > 'Z' */
    uint64_t upper = ge_a & ~gt_z & ~v & 0x8080808080808080ULL;
    return v | (upper >> 2);
}

/* the first k (1..8) bytes at p as a little-endian integer, ASCII-lowercased; never reads at or past lim */
static inline uint64_t load_le(const uint8_t *p, uint64_t k, const uint8_t *lim) {
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (p + 8 <= lim) {
        memcpy(&v, p, 8);
        return ascii_lower8(k >= 8 ? v : v & ((1ULL << (8 * k)) - 1));
    }
#endif
    for (uint64_t i = 0; i < k; i++) v |= (uint64_t)p[i] << (8 * i);
    return ascii_lower8(v);
}

static inline uint64_t word_hash(const uint8_t *w, uint64_t len, const uint8_t *lim) {
    uint64_t h = mix64(load_le(w, len < 8 ? len : 8, lim) ^ (len * M1));
    for (uint64_t k = 1; k < WORD_CHUNKS && len > 8 * k; k++) {
        uint64_t rest = len - 8 * k;
        h = mix64(h * M1 + load_le(w + 8 * k, rest < 8 ? rest : 8, lim));
    }
    if (len > 8 * WORD_CHUNKS) h = mix64(h * M1 + load_le(w + len - 8, 8, lim));
    return h;
}

static int check(Py_buffer *b, Py_ssize_t need, const char *what) {
    if (b->len < need) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, need %zd", what, b->len, need);
        return 0;
    }
    return 1;
}

/* offsets off[0..n] must rise (or stay) within 0..limit; else a ValueError naming them */
static int check_offsets(const int64_t *off, Py_ssize_t n, Py_ssize_t limit, const char *what) {
    if (n > 0 && (off[0] < 0 || off[n] > limit)) {
        PyErr_Format(PyExc_ValueError, "%s outside the data", what);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i + 1] < off[i]) {
            PyErr_Format(PyExc_ValueError, "%s must not decrease", what);
            return 0;
        }
    }
    return 1;
}

static uint8_t ASCII_WORD[128]; /* letters and digits */

#ifdef __SSE2__
/* bit k: byte k of p[0..16) is an ASCII letter or digit; *high gets the bytes >= 0x80 */
static inline uint64_t word_bits16(const uint8_t *p, uint64_t *high) {
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    __m128i l = _mm_or_si128(x, _mm_set1_epi8(0x20));
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)), _mm_cmplt_epi8(l, _mm_set1_epi8('z' + 1)));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
    *high = (uint64_t)(uint32_t)_mm_movemask_epi8(x);
    return (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_or_si128(letter, digit));
}
#endif

/* bit k: byte k of p[0..len) (len <= 64) is an ASCII letter or digit; *high gets the bytes >= 0x80 */
static inline uint64_t word_bits(const uint8_t *p, int64_t len, uint64_t *high) {
#ifdef __SSE2__
    if (len == 64) {
        uint64_t h0, h1, h2, h3;
        uint64_t m = word_bits16(p, &h0) | word_bits16(p + 16, &h1) << 16 | word_bits16(p + 32, &h2) << 32 | word_bits16(p + 48, &h3) << 48;
        *high = h0 | h1 << 16 | h2 << 32 | h3 << 48;
        return m;
    }
#endif
    uint64_t m = 0, h = 0;
    for (int64_t k = 0; k < len; k++) {
        uint8_t c = p[k];
        m |= (uint64_t)(c < 0x80 && ASCII_WORD[c]) << k;
        h |= (uint64_t)(c >> 7) << k;
    }
    *high = h;
    return m;
}

/* shingle_hashes(text, doc_offsets, hi_word, ngram, out_hashes, out_offsets) -> shingles written */
static PyObject *shingle_hashes(PyObject *self, PyObject *args) {
    Py_buffer text = {0}, offs = {0}, hiw = {0}, out = {0}, out_off = {0};
    int ngram;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*iw*w*", &text, &offs, &hiw, &ngram, &out, &out_off)) return NULL;
    Py_ssize_t n = offs.len / 8 - 1, i;
    const int64_t *off = (const int64_t *)offs.buf;
    if (ngram < 1 || ngram > 64) {
        PyErr_SetString(PyExc_ValueError, "ngram must be in 1..64");
        goto done;
    }
    if (n < 0 || !check(&out_off, (n + 1) * 8, "out_offsets") || !check_offsets(off, n, text.len, "doc_offsets")) goto done;
    const uint8_t *b = (const uint8_t *)text.buf, *hw = (const uint8_t *)hiw.buf, *lim = b + text.len;
    uint64_t *sh = (uint64_t *)out.buf;
    int64_t *so = (int64_t *)out_off.buf;
    Py_ssize_t cap = out.len / 8, total = 0, nhi = hiw.len, j = 0;
    int error = 0; /* 1: out_hashes too small, 2: hi_word too short */
    uint64_t ring[64]; /* the last ngram word hashes of the document */
    uint64_t top = 1;  /* M1^(ngram-1): the weight of the oldest word in a shingle */
    for (int k = 1; k < ngram; k++) top *= M1;
    Py_BEGIN_ALLOW_THREADS
    so[0] = 0;
    for (i = 0; i < n && !error; i++) {
        int64_t p, s = -1, end = off[i + 1], words = 0;
        int pos = 0;
        uint64_t h = 0, carry = 0; /* h: polynomial of the last ngram (or fewer) word hashes, rolled word by word */
        /* 64 bytes at a time: a bit mask of word bytes, then one step per word start or end */
        for (p = off[i]; p < end && !error; p += 64) {
            int64_t len = end - p < 64 ? end - p : 64;
            uint64_t high, m = word_bits(b + p, len, &high);
            while (high) { /* non-ASCII bytes: the caller's classes, in order */
                int k = __builtin_ctzll(high);
                high &= high - 1;
                if (j >= nhi) { error = 2; break; }
                m |= (uint64_t)hw[j++] << k;
            }
            uint64_t events = m ^ (m << 1 | carry); /* bit k: byte k starts (m = 1) or ends (m = 0) a word */
            carry = m >> 63;
            while (events) {
                int k = __builtin_ctzll(events);
                events &= events - 1;
                if (m >> k & 1) { s = p + k; continue; }
                uint64_t wh = word_hash(b + s, (uint64_t)(p + k - s), lim);
                s = -1;
                h = (words < ngram ? h : h - ring[pos] * top) * M1 + wh;
                ring[pos] = wh;
                pos = pos + 1 == ngram ? 0 : pos + 1;
                if (++words >= ngram) {
                    if (total >= cap) { error = 1; break; }
                    sh[total++] = mix64(h);
                }
            }
        }
        if (!error && s >= 0) { /* a word that runs to the document's end */
            uint64_t wh = word_hash(b + s, (uint64_t)(end - s), lim);
            h = (words < ngram ? h : h - ring[pos] * top) * M1 + wh;
            if (++words >= ngram) {
                if (total >= cap) error = 1;
                else sh[total++] = mix64(h);
            }
        }
        if (!error && words > 0 && words < ngram) { /* a short document: one shingle of all its words */
            if (total >= cap) error = 1;
            else sh[total++] = mix64(h);
        }
        so[i + 1] = total;
    }
    Py_END_ALLOW_THREADS
    if (!error && j != nhi) error = 2;
    if (error) PyErr_SetString(PyExc_ValueError, error == 1 ? "out_hashes too small" : "hi_word does not match the text's non-ASCII bytes");
    else result = PyLong_FromSsize_t(total);
done:
    PyBuffer_Release(&text);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&hiw);
    PyBuffer_Release(&out);
    PyBuffer_Release(&out_off);
    return result;
}

/* oph_signatures(shingles, offsets, num_perm, multipliers, probes, out) -> None
 * The compiled twin of curate.dedup.minhash.oph_signatures (see there for the method): out
 * (uint32[n * num_perm], filled with EMPTY by the caller) gets each document's bins, one
 * document at a time, so its row stays in the first-level cache. */
static PyObject *oph_signatures(PyObject *self, PyObject *args) {
    Py_buffer shb = {0}, offs = {0}, multb = {0}, probeb = {0}, outb = {0};
    int k;
    PyObject *result = NULL;
    uint32_t *orig = NULL;
    if (!PyArg_ParseTuple(args, "y*y*iy*y*w*", &shb, &offs, &k, &multb, &probeb, &outb)) return NULL;
    Py_ssize_t n = offs.len / 8 - 1, rounds = multb.len / 8, probes = k > 0 ? probeb.len / 8 / k : 0, i;
    const int64_t *off = (const int64_t *)offs.buf;
    const uint64_t *sh = (const uint64_t *)shb.buf, *mult = (const uint64_t *)multb.buf;
    const int64_t *probe = (const int64_t *)probeb.buf;
    uint32_t *out = (uint32_t *)outb.buf;
    if (k < 1 || rounds < 1 || rounds > 255 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "need num_perm >= 1, 1..255 multipliers and offsets");
        goto done;
    }
    if (!check(&outb, n * (Py_ssize_t)k * 4, "out") || !check_offsets(off, n, shb.len / 8, "offsets")) goto done;
    for (i = 0; i < probes * k; i++) {
        if (probe[i] < 0 || probe[i] >= k) {
            PyErr_SetString(PyExc_ValueError, "probes outside 0..num_perm");
            goto done;
        }
    }
    orig = (uint32_t *)PyMem_Malloc((size_t)k * 4);
    if (orig == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < n; i++) {
        if (off[i + 1] == off[i]) continue; /* no shingles: the row stays EMPTY */
        uint32_t *row = out + (size_t)i * k;
        Py_ssize_t empty = k;
        for (Py_ssize_t r = 0; r < rounds && empty; r++) {
            /* a later round's values carry a larger prefix: only bins still empty can change */
            uint64_t m = mult[r];
            uint32_t prefix = (uint32_t)r << 24;
            for (int64_t x = off[i]; x < off[i + 1]; x++) {
                uint64_t v = sh[x] * m;
                uint64_t bin = ((v >> 32) * (uint64_t)k) >> 32;
                uint32_t val = ((uint32_t)v >> 8) | prefix;
                if (val < row[bin]) row[bin] = val;
            }
            empty = 0;
            for (int j = 0; j < k; j++) empty += row[j] == 0xFFFFFFFFu;
        }
        if (!empty) continue;
        memcpy(orig, row, (size_t)k * 4); /* probes read the bins' own values, never a borrowed one */
        for (int j = 0; j < k; j++) {
            if (orig[j] != 0xFFFFFFFFu) continue;
            Py_ssize_t t;
            for (t = 0; t < probes; t++) {
                uint32_t v = orig[probe[t * k + j]];
                if (v != 0xFFFFFFFFu) { row[j] = v; break; }
            }
            if (t < probes) continue;
            for (int q = 1; q < k; q++) { /* rotation: the next non-empty bin to the right */
                uint32_t v = orig[(j + q) % k];
                if (v != 0xFFFFFFFFu) { row[j] = v; break; }
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(orig);
    PyBuffer_Release(&shb);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&multb);
    PyBuffer_Release(&probeb);
    PyBuffer_Release(&outb);
    return result;
}

/* pair_jaccard(shingles, offsets, a, b, out) -> None
 * Exact Jaccard similarity of the shingle sets of documents a[i] and b[i] into out[i]
 * (float32), document k's shingles being shingles[offsets[k]:offsets[k+1]] (uint32, in any
 * order, repeats allowed). Each pair goes through one open-addressing hash table (sized
 * for the largest pair, cleared by a generation count), so no set is ever sorted; the
 * compiled twin of curate.dedup.minhash.pair_jaccards. */
static PyObject *pair_jaccard(PyObject *self, PyObject *args) {
    Py_buffer setb = {0}, offs = {0}, ab = {0}, bb = {0}, outb = {0};
    PyObject *result = NULL;
    uint32_t *val = NULL, *gen = NULL;
    uint8_t *state = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &setb, &offs, &ab, &bb, &outb)) return NULL;
    Py_ssize_t m = offs.len / 8 - 1, pairs = ab.len / 8, i, longest = 0;
    const uint32_t *sh = (const uint32_t *)setb.buf;
    const int64_t *off = (const int64_t *)offs.buf, *a = (const int64_t *)ab.buf, *b = (const int64_t *)bb.buf;
    float *out = (float *)outb.buf;
    if (m < 0 || bb.len != ab.len || !check(&outb, pairs * 4, "out") || !check_offsets(off, m, setb.len / 4, "offsets")) goto done;
    for (i = 0; i < pairs; i++) {
        if (a[i] < 0 || a[i] >= m || b[i] < 0 || b[i] >= m) {
            PyErr_SetString(PyExc_ValueError, "a document index outside 0..len(offsets) - 1");
            goto done;
        }
        Py_ssize_t both = (Py_ssize_t)(off[a[i] + 1] - off[a[i]] + off[b[i] + 1] - off[b[i]]);
        if (both > longest) longest = both;
    }
    int bits = 4;
    while (((Py_ssize_t)1 << bits) < 2 * longest) bits++; /* load factor <= 1/2 */
    if (bits > 31) {
        PyErr_SetString(PyExc_ValueError, "a pair of documents with over 2^30 shingles");
        goto done;
    }
    size_t cap = (size_t)1 << bits, mask = cap - 1;
    val = PyMem_Malloc(cap * 4);
    gen = PyMem_Calloc(cap, 4);
    state = PyMem_Malloc(cap);
    if (val == NULL || gen == NULL || state == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    uint32_t g = 0;
    for (i = 0; i < pairs; i++) {
        if (++g == 0) { /* the generation count wrapped: clear the table once */
            memset(gen, 0, cap * 4);
            g = 1;
        }
        int64_t nx = 0, ny = 0, inter = 0;
        for (int64_t p = off[a[i]]; p < off[a[i] + 1]; p++) { /* x's distinct shingles, state 1 */
            uint32_t v = sh[p];
            size_t s = ((uint32_t)(v * 2654435761u) >> (32 - bits)) & mask;
            while (gen[s] == g && val[s] != v) s = (s + 1) & mask;
            if (gen[s] != g) { gen[s] = g; val[s] = v; state[s] = 1; nx++; }
        }
        for (int64_t p = off[b[i]]; p < off[b[i] + 1]; p++) { /* y's: 2 if also x's, else 3 */
            uint32_t v = sh[p];
            size_t s = ((uint32_t)(v * 2654435761u) >> (32 - bits)) & mask;
            while (gen[s] == g && val[s] != v) s = (s + 1) & mask;
            if (gen[s] != g) { gen[s] = g; val[s] = v; state[s] = 3; ny++; }
            else if (state[s] == 1) { state[s] = 2; ny++; inter++; }
        }
        out[i] = nx == 0 || ny == 0 ? 0.0f : (float)((double)inter / (double)(nx + ny - inter));
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(val);
    PyMem_Free(gen);
    PyMem_Free(state);
    PyBuffer_Release(&setb);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&bb);
    PyBuffer_Release(&outb);
    return result;
}

static PyMethodDef methods[] = {
    {"shingle_hashes", shingle_hashes, METH_VARARGS,
     "shingle_hashes(text, doc_offsets, hi_word, ngram, out_hashes, out_offsets) -> int\n\n"
     "Word n-gram shingle hashes of the UTF-8 documents text[doc_offsets[i]:doc_offsets[i+1]]\n"
     "(hi_word: uint8, 1 for each byte >= 0x80 that is part of a word character, in order),\n"
     "written to out_hashes (uint64) with per-document offsets in out_offsets (int64);\n"
     "returns how many."},
    {"oph_signatures", oph_signatures, METH_VARARGS,
     "oph_signatures(shingles, offsets, num_perm, multipliers, probes, out) -> None\n\n"
     "MinHash bins of each document's shingles (uint64) into out (uint32[n * num_perm], all\n"
     "0xFFFFFFFF on entry): one round per multiplier, then densification by probes\n"
     "(int64[t * num_perm]) and rotation, as curate.dedup.minhash.oph_signatures."},
    {"pair_jaccard", pair_jaccard, METH_VARARGS,
     "pair_jaccard(shingles, offsets, a, b, out) -> None\n\n"
     "Exact Jaccard of the shingle sets (uint32, any order, repeats allowed) of documents\n"
     "a[i] and b[i] (indices into offsets) into out (float32), as\n"
     "curate.dedup.minhash.pair_jaccards."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shingles", "Word n-gram shingle hashes (see _shingles.c).", -1, methods};

PyMODINIT_FUNC PyInit__shingles(void) {
    for (int c = 0; c < 128; c++) ASCII_WORD[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return PyModule_Create(&module);
}
