/* Gopher repetition statistics of one document's tokens, in one pass per n-gram size.
 *
 * The compiled twin of curate.stages.filters.text.Doc.top_ngram_chars and
 * Doc.duplicate_ngram_chars (the numpy reference, which tests hold it equal to). The tokens
 * are interned by their string value; n-gram classes are built exactly, (n-1)-gram class x
 * next token -> n-gram class, numbered in order of first appearance, so "the most frequent
 * n-gram, the first of equals" and the left-to-right duplicate scan are those of the
 * reference. With joined=1 the 5- to 10-grams are classed by their tokens' characters run
 * together (datatrove 0.10.1's find_all_duplicate): a 64-bit polynomial hash of the
 * characters picks the candidates and the characters themselves decide, so classes are
 * exact. Needs only Python.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HB 0x9E3779B97F4A7C15ULL

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

static Py_ssize_t table_size(Py_ssize_t n) {
    Py_ssize_t s = 16;
    while (s < 2 * n) s <<= 1;
    return s;
}

/* Token ids by string value, in order of first appearance; returns the number of distinct tokens or -1. */
static Py_ssize_t intern_tokens(PyObject *list, Py_ssize_t n, int64_t *ids) {
    Py_ssize_t size = table_size(n), mask = size - 1, distinct = 0;
    PyObject **keys = PyMem_Calloc(size, sizeof(PyObject *));
    int64_t *vals = PyMem_Malloc(size * sizeof(int64_t));
    if (!keys || !vals) {
        PyMem_Free(keys);
        PyMem_Free(vals);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(list, i);
        Py_hash_t h = PyObject_Hash(t);
        if (h == -1) {
            distinct = -1;
            break;
        }
        Py_ssize_t slot = (Py_ssize_t)(mix64((uint64_t)h) & (uint64_t)mask);
        for (;;) {
            PyObject *k = keys[slot];
            if (k == NULL) {
                keys[slot] = t;
                vals[slot] = distinct;
                ids[i] = distinct++;
                break;
            }
            if (k == t || (PyObject_Hash(k) == h && PyUnicode_Compare(k, t) == 0)) {
                ids[i] = vals[slot];
                break;
            }
            slot = (slot + 1) & mask;
        }
    }
    PyMem_Free(keys);
    PyMem_Free(vals);
    return distinct;
}

/* One exact class per distinct key (two int64 halves), numbered by first appearance. */
typedef struct {
    Py_ssize_t mask;
    int64_t *ka, *kb, *code; /* code -1: empty */
} PairTable;

static int pair_init(PairTable *t, Py_ssize_t n) {
    Py_ssize_t size = table_size(n);
    t->mask = size - 1;
    t->ka = PyMem_Malloc(size * sizeof(int64_t));
    t->kb = PyMem_Malloc(size * sizeof(int64_t));
    t->code = PyMem_Malloc(size * sizeof(int64_t));
    if (!t->ka || !t->kb || !t->code) return -1;
    memset(t->code, 0xff, size * sizeof(int64_t));
    return 0;
}

static void pair_free(PairTable *t) {
    PyMem_Free(t->ka);
    PyMem_Free(t->kb);
    PyMem_Free(t->code);
}

static inline int64_t pair_get(PairTable *t, int64_t a, int64_t b, int64_t *next) {
    Py_ssize_t slot = (Py_ssize_t)(mix64((uint64_t)a * HB + (uint64_t)b) & (uint64_t)t->mask);
    for (;;) {
        if (t->code[slot] < 0) {
            t->ka[slot] = a;
            t->kb[slot] = b;
            t->code[slot] = (*next)++;
            return t->code[slot];
        }
        if (t->ka[slot] == a && t->kb[slot] == b) return t->code[slot];
        slot = (slot + 1) & t->mask;
    }
}

/* Characters in duplicated n-grams, left to right, jumping past each duplicate counted. */
static int64_t dup_scan(const int64_t *codes, Py_ssize_t m, int n, const int64_t *counts, uint8_t *seen, const int64_t *cum) {
    int64_t total = 0;
    Py_ssize_t skip_until = -1;
    for (Py_ssize_t p = 0; p < m; p++) {
        if (p < skip_until) continue;
        int64_t g = codes[p];
        if (counts[g] < 2) continue;
        if (seen[g]) {
            total += cum[p + n] - cum[p];
            skip_until = p + n;
        } else {
            seen[g] = 1;
        }
    }
    return total;
}

static PyObject *repetition_stats(PyObject *self, PyObject *args) {
    PyObject *list;
    int joined, lo_top, hi_top, lo_dup, hi_dup;
    if (!PyArg_ParseTuple(args, "O!iiiii", &PyList_Type, &list, &lo_top, &hi_top, &lo_dup, &hi_dup, &joined)) return NULL;
    if (lo_top < 1 || hi_top < lo_top || lo_dup < 1 || hi_dup < lo_dup || hi_top > 64 || hi_dup > 64) {
        PyErr_SetString(PyExc_ValueError, "n-gram sizes out of range");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(list, i))) {
            PyErr_SetString(PyExc_TypeError, "tokens must be str");
            return NULL;
        }
    }
    int hi = joined ? hi_top : (hi_top > hi_dup ? hi_top : hi_dup); /* token-by-token classes needed up to here */
    PyObject *result = PyTuple_New((hi_top - lo_top + 1) + (hi_dup - lo_dup + 1));
    if (!result) return NULL;
    int64_t *ids = PyMem_Malloc((n + 1) * sizeof(int64_t));
    int64_t *cum = PyMem_Malloc((n + 1) * sizeof(int64_t));
    int64_t *codes = PyMem_Malloc((n + 1) * sizeof(int64_t));
    int64_t *counts = PyMem_Calloc(n + 1, sizeof(int64_t));
    uint8_t *seen = PyMem_Calloc(n + 1, 1);
    Py_UCS4 *chars = NULL;
    uint64_t *hpre = NULL, *hpow = NULL;
    PairTable pt = {0, NULL, NULL, NULL};
    int ok = 0;
    if (!ids || !cum || !codes || !counts || !seen) {
        PyErr_NoMemory();
        goto done;
    }
    cum[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) cum[i + 1] = cum[i] + PyUnicode_GET_LENGTH(PyList_GET_ITEM(list, i));
    Py_ssize_t distinct = n ? intern_tokens(list, n, ids) : 0;
    if (distinct < 0) goto done;
    memcpy(codes, ids, n * sizeof(int64_t));
    if (pair_init(&pt, n) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (int g = 1; g <= hi; g++) {
        Py_ssize_t m = n - g + 1;
        int64_t classes = 0;
        if (m > 0) {
            if (g == 1) {
                classes = distinct;
            } else {
                memset(pt.code, 0xff, (pt.mask + 1) * sizeof(int64_t));
                for (Py_ssize_t i = 0; i < m; i++) codes[i] = pair_get(&pt, codes[i], ids[i + g - 1], &classes);
            }
            memset(counts, 0, (classes + 1) * sizeof(int64_t));
            for (Py_ssize_t i = 0; i < m; i++) counts[codes[i]]++;
        }
        if (g >= lo_top && g <= hi_top) {
            int64_t value = 0;
            if (m > 0) {
                int64_t best = 0;
                for (int64_t c = 1; c < classes; c++)
                    if (counts[c] > counts[best]) best = c;
                Py_ssize_t start = 0;
                while (codes[start] != best) start++;
                value = (cum[start + g] - cum[start] + g - 1) * counts[best];
            }
            PyTuple_SET_ITEM(result, g - lo_top, PyLong_FromLongLong(value));
        }
        if (g >= lo_dup && g <= hi_dup && !joined) {
            int64_t value = 0;
            if (m > 0) {
                memset(seen, 0, classes);
                value = dup_scan(codes, m, g, counts, seen, cum);
            }
            PyTuple_SET_ITEM(result, (hi_top - lo_top + 1) + g - lo_dup, PyLong_FromLongLong(value));
        }
    }
    if (joined) {
        /* all characters run together; prefix hashes H[k] of chars[0:k], powers B^k */
        Py_ssize_t total = cum[n];
        chars = PyMem_Malloc((total + 1) * sizeof(Py_UCS4));
        hpre = PyMem_Malloc((total + 1) * sizeof(uint64_t));
        hpow = PyMem_Malloc((total + 1) * sizeof(uint64_t));
        if (!chars || !hpre || !hpow) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *t = PyList_GET_ITEM(list, i);
            if (!PyUnicode_AsUCS4(t, chars + cum[i], cum[i + 1] - cum[i] + 1, 0) && cum[i + 1] > cum[i]) goto done;
        }
        hpre[0] = 0;
        hpow[0] = 1;
        for (Py_ssize_t k = 0; k < total; k++) {
            hpre[k + 1] = hpre[k] * HB + (uint64_t)chars[k] + 1;
            hpow[k + 1] = hpow[k] * HB;
        }
        Py_ssize_t size = pt.mask + 1;
        for (int g = lo_dup; g <= hi_dup; g++) {
            Py_ssize_t m = n - g + 1;
            int64_t value = 0;
            if (m > 0) {
                int64_t classes = 0;
                memset(pt.code, 0xff, size * sizeof(int64_t));
                for (Py_ssize_t i = 0; i < m; i++) {
                    int64_t a = cum[i], len = cum[i + g] - a;
                    uint64_t h = hpre[a + len] - hpre[a] * hpow[len];
                    Py_ssize_t slot = (Py_ssize_t)(mix64(h ^ ((uint64_t)len * 0xFF51AFD7ED558CCDULL)) & (uint64_t)pt.mask);
                    for (;;) {
                        if (pt.code[slot] < 0) { /* ka: the hash, kb: a position holding these characters */
                            pt.ka[slot] = (int64_t)h;
                            pt.kb[slot] = i;
                            pt.code[slot] = classes++;
                            break;
                        }
                        int64_t q = pt.kb[slot], qa = cum[q];
                        if (pt.ka[slot] == (int64_t)h && cum[q + g] - qa == len && memcmp(chars + qa, chars + a, len * sizeof(Py_UCS4)) == 0)
                            break;
                        slot = (slot + 1) & pt.mask;
                    }
                    codes[i] = pt.code[slot];
                }
                memset(counts, 0, (classes + 1) * sizeof(int64_t));
                for (Py_ssize_t i = 0; i < m; i++) counts[codes[i]]++;
                memset(seen, 0, classes);
                value = dup_scan(codes, m, g, counts, seen, cum);
            }
            PyTuple_SET_ITEM(result, (hi_top - lo_top + 1) + g - lo_dup, PyLong_FromLongLong(value));
        }
    }
    ok = 1;
done:
    PyMem_Free(ids);
    PyMem_Free(cum);
    PyMem_Free(codes);
    PyMem_Free(counts);
    PyMem_Free(seen);
    PyMem_Free(chars);
    PyMem_Free(hpre);
    PyMem_Free(hpow);
    pair_free(&pt);
    if (!ok) {
        Py_DECREF(result);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); i++) {
        if (PyTuple_GET_ITEM(result, i) == NULL) { /* a PyLong_FromLongLong failed */
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

static PyMethodDef methods[] = {
    {"repetition_stats", repetition_stats, METH_VARARGS,
     "repetition_stats(tokens, lo_top, hi_top, lo_dup, hi_dup, joined) -> tuple[int, ...]\n\n"
     "For n in lo_top..hi_top: the characters of the most frequent n-gram (tokens joined by one\n"
     "space; the first of equals) times its count; then for n in lo_dup..hi_dup: the characters\n"
     "of duplicated n-grams counted without overlaps, n-grams compared token by token or, with\n"
     "joined, as their characters run together (Doc.top_ngram_chars, Doc.duplicate_ngram_chars)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ngrams", "Gopher repetition n-gram statistics (see _ngrams.c).", -1, methods};

PyMODINIT_FUNC PyInit__ngrams(void) { return PyModule_Create(&module); }
