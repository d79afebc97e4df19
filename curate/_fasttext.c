/* fastText supervised prediction (top-1 label and its probability, or one label's probability) for a batch of texts.
 *
 * The compiled twin of fastText 0.9.2's FastText::predictLine for the models curate loads
 * (curate.fasttext parses the file and checks that it is one of them): each
 * text is split into tokens at the bytes fastText splits at, every token is looked up in
 * the vocabulary, its character n-grams are hashed (FNV-1a over the UTF-8 bytes, each byte
 * sign-extended as fastText does), pruned and bucketed, word n-gram hashes are added, and
 * the hidden vector is the float32 sum of the rows in fastText's order, times 1/count. The
 * output layer is a hierarchical softmax searched depth first with fastText's pruning, a
 * softmax, or one-vs-all with fastText's sigmoid table. Same operations in the same order in
 * float32, so the results are fastText's bit for bit.
 *
 * Where the time goes (callgrind and timings, a word-bigram model of 100 MB): the input rows, read at random from a matrix
 * larger than the caches, then the reading of tokens. So each row is prefetched as soon as its index is known and summed a few
 * dozen rows later in a tight loop (see Rows); a line's tokens are read in chunks with their vocabulary slots and then those
 * slots' bytes prefetched before they are looked up; the vocabulary is an open-addressing table of {hash, id, offset, length}
 * (one slot and one compare of the bytes per token); the sums are compiled for AVX2 too where the CPU has it (element-wise
 * float32 additions: the same results as SSE2). One batch loop serves both entry points.
 * Needs only Python.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { LOSS_SOFTMAX = 0, LOSS_HS = 1, LOSS_OVA = 2 };

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_AVX2_CLONE 1
#endif

/* one vocabulary slot: fastText's hash of the word, its entry id (-1: empty), where its bytes are */
typedef struct {
    uint32_t hash;
    int32_t id;
    uint32_t off, len;
} Slot;

typedef struct {
    int32_t dim, minn, maxn, word_ngrams, bucket, nwords, loss, osz; /* loss: LOSS_SOFTMAX, LOSS_HS or LOSS_OVA */
    int64_t prune_size; /* -1: no pruning, 0: every n-gram pruned, >0: prune_map holds the kept buckets */
    int32_t nsubq, dsub, lastdsub;
    int quant;
    const uint8_t *codes;   /* quant: nsubq bytes per row */
    const float *centroids; /* quant: the product quantizer's centroids */
    const float *norms;     /* quant: each row's norm (1 unless the norms were quantized too) */
    const float *input;     /* dense: dim floats per row */
    int64_t input_rows;
    const float *output; /* osz (softmax) or osz - 1 (hierarchical softmax) rows of dim floats */
    const int32_t *left, *right; /* the Huffman tree (hierarchical softmax): 2 * osz - 1 nodes */
    const int32_t *prune_map;    /* bucket -> row offset after the words, or -1 */
    const Slot *slots;           /* the vocabulary: open addressing by fastText's hash, a power of two of slots */
    uint64_t slot_mask;
    const uint8_t *vocab_bytes;
    int32_t eos_id;
    const uint8_t *label_prefix;
    Py_ssize_t label_prefix_len;
} Model;

static const uint8_t SEPARATOR[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1, ['\v'] = 1, ['\f'] = 1, [0] = 1};
#define FNV_BASIS 2166136261u

static inline uint32_t ft_hash(const uint8_t *s, Py_ssize_t n, uint32_t h) {
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint32_t)(int8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

static inline int32_t vocab_id(const Model *m, const uint8_t *w, Py_ssize_t n, uint32_t h) {
    for (uint64_t s = h & m->slot_mask;; s = (s + 1) & m->slot_mask) {
        const Slot *e = &m->slots[s];
        if (e->id < 0) return -1;
        if (e->hash == h && (Py_ssize_t)e->len == n && memcmp(m->vocab_bytes + e->off, w, n) == 0) return e->id;
    }
}

/* The rows of a line, summed in fastText's order (so the float32 sums are fastText's). The input matrix is read at random rows,
 * and the loads, not the additions, take the time: each row is prefetched as soon as its index is known, listed, and the list
 * is summed every ROWS rows in a tight loop with the partial sums in registers (the next tokens are read while the last ROWS
 * rows load). Measured on a 100 MB bigram model: better than a ring of rows summed one by one, a longer list, or prefetching
 * only in the summing loop. */
#define ROWS 64
typedef struct {
    float *hidden;
    int64_t n;
    int64_t rows[ROWS];
} Rows;

#if defined(__GNUC__)
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi" /* v8f never crosses a call: every function using it is inlined */
#endif
typedef float v8f __attribute__((vector_size(32)));
static ALWAYS_INLINE v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static ALWAYS_INLINE void store8(float *p, v8f v) { memcpy(p, &v, sizeof v); }
#endif

/* hidden[k] += row[k] for each listed row in order, element by element: the same float32 additions as fastText's addRow */
static ALWAYS_INLINE void sum_dense(const Model *m, float *restrict hidden, const int64_t *rows, int64_t n) {
    const float *in = m->input;
    int64_t dim = m->dim, k = 0;
#if defined(__GNUC__)
    for (; k + 64 <= dim; k += 64) {
        v8f a0 = load8(hidden + k), a1 = load8(hidden + k + 8), a2 = load8(hidden + k + 16), a3 = load8(hidden + k + 24);
        v8f a4 = load8(hidden + k + 32), a5 = load8(hidden + k + 40), a6 = load8(hidden + k + 48), a7 = load8(hidden + k + 56);
        for (int64_t i = 0; i < n; i++) {
            const float *r = in + rows[i] * dim + k;
            a0 += load8(r), a1 += load8(r + 8), a2 += load8(r + 16), a3 += load8(r + 24);
            a4 += load8(r + 32), a5 += load8(r + 40), a6 += load8(r + 48), a7 += load8(r + 56);
        }
        store8(hidden + k, a0), store8(hidden + k + 8, a1), store8(hidden + k + 16, a2), store8(hidden + k + 24, a3);
        store8(hidden + k + 32, a4), store8(hidden + k + 40, a5), store8(hidden + k + 48, a6), store8(hidden + k + 56, a7);
    }
    for (; k + 8 <= dim; k += 8) {
        v8f a = load8(hidden + k);
        for (int64_t i = 0; i < n; i++) a += load8(in + rows[i] * dim + k);
        store8(hidden + k, a);
    }
#endif
    for (; k < dim; k++) {
        float a = hidden[k];
        for (int64_t i = 0; i < n; i++) a += in[rows[i] * dim + k];
        hidden[k] = a;
    }
}

/* fastText's ProductQuantizer::addcode for each listed row, alpha = the row's norm (each element: one addition a row) */
static ALWAYS_INLINE void sum_quantized(const Model *m, float *restrict hidden, const int64_t *rows, int64_t n) {
    const int32_t nsubq = m->nsubq, dsub = m->dsub, lastdsub = m->lastdsub;
    const float *centroids = m->centroids, *norms = m->norms, *last = centroids + (int64_t)(nsubq - 1) * 256 * dsub;
    const uint8_t *codes = m->codes;
    float *hlast = hidden + (int64_t)(nsubq - 1) * dsub;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *code = codes + (int64_t)nsubq * rows[i];
        float norm = norms[rows[i]];
        for (int32_t q = 0; q < nsubq - 1; q++) {
            const float *c = centroids + ((int64_t)q * 256 + code[q]) * dsub;
            float *h = hidden + (int64_t)q * dsub;
            for (int32_t k = 0; k < dsub; k++) h[k] += norm * c[k];
        }
        const float *c = last + (int64_t)code[nsubq - 1] * lastdsub;
        for (int32_t k = 0; k < lastdsub; k++) hlast[k] += norm * c[k];
    }
}

static ALWAYS_INLINE void flush_rows(const Model *m, Rows *r) {
    if (m->quant) sum_quantized(m, r->hidden, r->rows, r->n);
    else sum_dense(m, r->hidden, r->rows, r->n);
    r->n = 0;
}

/* a dense row's cache lines (a product-quantized input is a few bytes a row: the models are small enough to stay cached) */
static ALWAYS_INLINE void prefetch_row(const Model *m, int64_t row) {
    if (m->quant) return;
    uintptr_t a = (uintptr_t)(m->input + row * m->dim), e = a + (uintptr_t)m->dim * sizeof(float) - 1;
    for (a &= ~(uintptr_t)63; a <= e; a += 64) __builtin_prefetch((const void *)a);
}

static ALWAYS_INLINE void add_row(const Model *m, Rows *r, int64_t row) {
    prefetch_row(m, row);
    if (r->n == ROWS) flush_rows(m, r);
    r->rows[r->n++] = row;
}

static ALWAYS_INLINE void push_bucket(const Model *m, Rows *r, int64_t *count, int32_t h) {
    if (m->prune_size == 0 || h < 0) return;
    int64_t id = h;
    if (m->prune_size > 0) {
        id = m->prune_map[h];
        if (id < 0) return;
    }
    add_row(m, r, m->nwords + id);
    (*count)++;
}

/* fastText's computeSubwords over "<" + token + ">" (bytes in w[0:n]) */
static ALWAYS_INLINE void add_subwords(const Model *m, Rows *r, int64_t *count, const uint8_t *w, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((w[i] & 0xC0) == 0x80) continue;
        uint32_t h = FNV_BASIS;
        Py_ssize_t j = i;
        for (int32_t len = 1; j < n && len <= m->maxn; len++) {
            h = ft_hash(w + j, 1, h);
            j++;
            while (j < n && (w[j] & 0xC0) == 0x80) {
                h = ft_hash(w + j, 1, h);
                j++;
            }
            if (len >= m->minn && !(len == 1 && (i == 0 || j == n))) push_bucket(m, r, count, (int32_t)(h % (uint32_t)m->bucket));
        }
    }
}

/* A line's tokens are read TOKENS at a time: read (their vocabulary slots prefetched), their slots' bytes prefetched, then looked
 * up; the vocabulary is a table of several MB read at random, so its loads too are better in flight together. */
#define TOKENS 256
typedef struct {
    const uint8_t *w;
    Py_ssize_t n;
    uint32_t h;
} Token;

/* fastText's readWord up to TOKENS times from text[*pos:len]; returns how many were read, *stop: the line ended
 * (a newline, which is the end-of-sentence token, or that token written out) */
static ALWAYS_INLINE int read_tokens(const Model *m, const uint8_t *text, Py_ssize_t len, Py_ssize_t *pos, Token *t, int *stop) {
    Py_ssize_t p = *pos;
    int k = 0;
    *stop = 0;
    while (k < TOKENS) {
        while (p < len && SEPARATOR[text[p]] && text[p] != '\n') p++; /* skip separators; a newline alone is a token */
        if (p >= len) {
            *stop = 1;
            break;
        }
        if (text[p] == '\n') {
            p++;
            t[k].w = (const uint8_t *)"</s>";
            t[k].n = 4;
            t[k].h = ft_hash(t[k].w, 4, FNV_BASIS);
        } else { /* the token's bytes, hashed as they are read; the separator after it stays for the next token */
            Py_ssize_t start = p;
            uint32_t h = FNV_BASIS;
            do {
                h ^= (uint32_t)(int8_t)text[p];
                h *= 16777619u;
                p++;
            } while (p < len && !SEPARATOR[text[p]]);
            t[k].w = text + start;
            t[k].n = p - start;
            t[k].h = h;
        }
        __builtin_prefetch(&m->slots[t[k].h & m->slot_mask]);
        if (t[k].n == 4 && memcmp(t[k].w, "</s>", 4) == 0) { /* getLine stops at the end-of-sentence token */
            k++;
            *stop = 1;
            break;
        }
        k++;
    }
    *pos = p;
    return k;
}

/* fastText's getLine + computeHidden: the hidden vector of one line (averaged); returns how many rows were summed (0: none).
 * buf: room for the longest token + 2; hashes: for every token of the line. */
static ALWAYS_INLINE int64_t compute_hidden(const Model *m, const uint8_t *text, Py_ssize_t len, uint8_t *buf, int32_t *hashes,
                                            Token *toks, Rows *rows, float *out) {
    int64_t count = 0, nhash = 0;
    memset(out, 0, m->dim * sizeof(float));
    rows->hidden = out;
    rows->n = 0;
    Py_ssize_t pos = 0;
    int stop = 0;
    while (!stop) {
        int nt = read_tokens(m, text, len, &pos, toks, &stop);
        for (int i = 0; i < nt; i++) { /* the bytes of the (likely) entry */
            const Slot *e = &m->slots[toks[i].h & m->slot_mask];
            if (e->hash == toks[i].h) __builtin_prefetch(m->vocab_bytes + e->off);
        }
        for (int i = 0; i < nt; i++) {
            const uint8_t *w = toks[i].w;
            Py_ssize_t wn = toks[i].n;
            int32_t wid = vocab_id(m, w, wn, toks[i].h);
            /* entries are words first, then labels; an unknown token is a label when it starts with the label prefix */
            int label = wid >= 0 ? wid >= m->nwords : wn >= m->label_prefix_len && memcmp(w, m->label_prefix, m->label_prefix_len) == 0;
            if (label) continue;
            if (wid >= 0) {
                add_row(m, rows, wid);
                count++;
            }
            if (m->maxn > 0 && wid != m->eos_id) { /* the end-of-sentence token has no subwords (and is always known) */
                buf[0] = '<';
                memcpy(buf + 1, w, wn);
                buf[wn + 1] = '>';
                add_subwords(m, rows, &count, buf, wn + 2);
            }
            hashes[nhash++] = (int32_t)toks[i].h; /* fastText keeps word hashes as int32 */
        }
    }
    /* word n-grams (fastText's addWordNgrams) */
    for (int64_t i = 0; i < nhash && m->word_ngrams > 1; i++) {
        uint64_t h = (uint64_t)(int64_t)hashes[i]; /* sign-extended, as fastText's int32 -> uint64 */
        for (int64_t j = i + 1; j < nhash && j < i + m->word_ngrams; j++) {
            h = h * 116049371ULL + (uint64_t)(int64_t)hashes[j];
            push_bucket(m, rows, &count, (int32_t)(h % (uint64_t)m->bucket));
        }
    }
    flush_rows(m, rows);
    if (count == 0) return 0;
    float a = (float)(1.0 / (double)count);
    for (int32_t k = 0; k < m->dim; k++) out[k] *= a;
    return count;
}

typedef struct {
    float score;
    int32_t node;
    int have;
} Best;

static inline float std_log(float x) { return (float)log((double)x + 1e-5); }

static inline float dot_row(const Model *m, int64_t row, const float *hidden) {
    const float *r = m->output + row * m->dim;
    float d = 0.0f;
    for (int32_t k = 0; k < m->dim; k++) d += r[k] * hidden[k];
    return d;
}

static inline float sigmoid(float x) { return (float)(1. / (1 + expf(-x))); }

static void dfs(const Model *m, int32_t node, float score, Best *best, const float *hidden) {
    if (score < std_log(0.0f)) return;
    if (best->have && score < best->score) return;
    if (m->left[node] == -1 && m->right[node] == -1) {
        /* k = 1: a leaf scoring as high as the best replaces it (std::push_heap / pop_heap) */
        best->score = score;
        best->node = node;
        best->have = 1;
        return;
    }
    float f = sigmoid(dot_row(m, node - m->osz, hidden));
    dfs(m, m->left[node], score + std_log(1.0f - f), best, hidden);
    dfs(m, m->right[node], score + std_log(f), best, hidden);
}

/* fastText's Loss::sigmoid: the one-vs-all output reads a table of 513 values over [-8, 8] (MAX_SIGMOID, SIGMOID_TABLE_SIZE) */
#define MAX_SIGMOID 8
#define SIGMOID_TABLE_SIZE 512
static float t_sigmoid[SIGMOID_TABLE_SIZE + 1];

static void init_sigmoid_table(void) {
    for (int i = 0; i < SIGMOID_TABLE_SIZE + 1; i++) {
        float x = (float)(i * 2 * MAX_SIGMOID) / SIGMOID_TABLE_SIZE - MAX_SIGMOID;
        t_sigmoid[i] = (float)(1.0 / (1.0 + expf(-x)));
    }
}

static inline float table_sigmoid(float x) {
    if (x < -MAX_SIGMOID) return 0.0f;
    if (x > MAX_SIGMOID) return 1.0f;
    int64_t i = (int64_t)((x + MAX_SIGMOID) * SIGMOID_TABLE_SIZE / MAX_SIGMOID / 2);
    return t_sigmoid[i];
}

/* softmax or one-vs-all: every label's probability into scratch (fastText's computeOutput) */
static void flat_output(const Model *m, const float *hidden, float *scratch) {
    if (m->loss == LOSS_OVA) {
        for (int32_t i = 0; i < m->osz; i++) scratch[i] = table_sigmoid(dot_row(m, i, hidden));
        return;
    }
    float mx = 0.0f, z = 0.0f;
    for (int32_t i = 0; i < m->osz; i++) {
        scratch[i] = dot_row(m, i, hidden);
        if (i == 0 || scratch[i] > mx) mx = scratch[i];
    }
    for (int32_t i = 0; i < m->osz; i++) {
        scratch[i] = expf(scratch[i] - mx);
        z += scratch[i];
    }
    for (int32_t i = 0; i < m->osz; i++) scratch[i] /= z;
}

/* top-1: the label (-1: none, as fastText predicts nothing for an empty line) and its probability */
static void top1(const Model *m, const float *hidden, float *scratch, int32_t *label, float *prob) {
    *label = -1;
    *prob = 0.0f;
    if (m->loss == LOSS_HS) {
        Best best = {0.0f, -1, 0};
        dfs(m, 2 * m->osz - 2, 0.0f, &best, hidden);
        if (best.have) {
            *label = best.node;
            *prob = expf(best.score);
        }
        return;
    }
    flat_output(m, hidden, scratch);
    float best = 0.0f;
    for (int32_t i = 0; i < m->osz; i++) {
        float s = std_log(scratch[i]);
        if (*label < 0 || !(s < best)) { /* k = 1: an equal score replaces the best (std::push_heap / pop_heap) */
            best = s;
            *label = i;
        }
    }
    *prob = expf(best);
}

/* The probability fastText's predict(k=-1, threshold=0) reports for one label: exp(log(p + 1e-5)) as it computes it; 0 when its
 * search prunes the label (hierarchical softmax). path: the label's nodes, root first (depth nodes). */
static float label_prob(const Model *m, const float *hidden, float *scratch, int32_t label, const int32_t *path, int32_t depth) {
    if (m->loss != LOSS_HS) {
        flat_output(m, hidden, scratch);
        return expf(std_log(scratch[label]));
    }
    float score = 0.0f, floor = std_log(0.0f);
    for (int32_t d = 0; d + 1 < depth; d++) { /* the dfs, along the one path to the label's leaf */
        if (score < floor) return 0.0f;
        int32_t node = path[d];
        float f = sigmoid(dot_row(m, node - m->osz, hidden));
        score = path[d + 1] == m->left[node] ? score + std_log(1.0f - f) : score + std_log(f);
    }
    return score < floor ? 0.0f : expf(score);
}

/* One batch: texts[off[i]:off[i+1]]; top-1 into labels and probs, or (labels NULL) one label's probability into probs. */
typedef struct {
    const uint8_t *text;
    const int64_t *off;
    Py_ssize_t n;
    int32_t *labels;
    float *probs;
    int32_t label, depth;
    const int32_t *path;
    uint8_t *buf;
    int32_t *hashes;
    Token *toks;
    Rows *rows;
    float *hidden, *scratch;
} Job;

static ALWAYS_INLINE void run_impl(const Model *m, const Job *j) {
    for (Py_ssize_t i = 0; i < j->n; i++) {
        int empty = compute_hidden(m, j->text + j->off[i], j->off[i + 1] - j->off[i], j->buf, j->hashes, j->toks, j->rows, j->hidden) == 0;
        if (j->labels == NULL) j->probs[i] = empty ? NAN : label_prob(m, j->hidden, j->scratch, j->label, j->path, j->depth);
        else if (empty) j->labels[i] = -1, j->probs[i] = 0.0f;
        else top1(m, j->hidden, j->scratch, j->labels + i, j->probs + i);
    }
}

static void run_generic(const Model *m, const Job *j) { run_impl(m, j); }
#ifdef HAVE_AVX2_CLONE
__attribute__((target("avx2"))) static void run_avx2(const Model *m, const Job *j) { run_impl(m, j); }
#endif

static int get_buf(PyObject *obj, Py_buffer *b, const char *what) {
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: a contiguous buffer is needed", what);
        return -1;
    }
    return 0;
}

#define NFIELDS 27
/* The model tuple (curate.fasttext.ModelFile.kernel) into m; its buffers into bufs (nb of them held: release them). */
static int parse_model(PyObject *o_model, Model *m, Py_buffer *bufs, int *nb) {
    if (PyTuple_GET_SIZE(o_model) != NFIELDS) {
        PyErr_SetString(PyExc_ValueError, "model: 27 fields expected");
        return -1;
    }
    long long ints[16];
    for (int i = 0; i < 16; i++) {
        ints[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(o_model, i));
        if (ints[i] == -1 && PyErr_Occurred()) return -1;
    }
    m->dim = (int32_t)ints[0];
    m->minn = (int32_t)ints[1];
    m->maxn = (int32_t)ints[2];
    m->word_ngrams = (int32_t)ints[3];
    m->bucket = (int32_t)ints[4];
    m->nwords = (int32_t)ints[5];
    m->loss = (int32_t)ints[6];
    m->osz = (int32_t)ints[7];
    m->prune_size = ints[8];
    m->nsubq = (int32_t)ints[9];
    m->dsub = (int32_t)ints[10];
    m->lastdsub = (int32_t)ints[11];
    m->quant = (int)ints[12];
    m->input_rows = ints[13];
    m->eos_id = (int32_t)ints[14];
    long long nslots = ints[15];
    if (m->dim < 1 || m->dim > 4096 || m->osz < 1 || m->bucket < 1 || nslots < 1 || (nslots & (nslots - 1)) || m->maxn > 64 ||
        m->loss < LOSS_SOFTMAX || m->loss > LOSS_OVA) {
        PyErr_SetString(PyExc_ValueError, "model: bad sizes");
        return -1;
    }
    m->slot_mask = (uint64_t)nslots - 1;
    const char *names[10] = {"codes", "centroids", "input", "norms", "output", "left", "right", "prune_map", "slots", "vocab_bytes"};
    for (int i = 0; i < 10; i++) {
        if (get_buf(PyTuple_GET_ITEM(o_model, 16 + i), &bufs[*nb], names[i]) < 0) return -1;
        (*nb)++;
    }
    m->codes = bufs[0].buf;
    m->centroids = bufs[1].buf;
    m->input = bufs[2].buf;
    m->norms = bufs[3].buf;
    m->output = bufs[4].buf;
    m->left = bufs[5].buf;
    m->right = bufs[6].buf;
    m->prune_map = bufs[7].buf;
    m->slots = bufs[8].buf;
    m->vocab_bytes = bufs[9].buf;
    if (m->loss == LOSS_HS && bufs[5].len < (Py_ssize_t)((2 * (int64_t)m->osz - 1) * sizeof(int32_t))) {
        PyErr_SetString(PyExc_ValueError, "model: the tree is too small");
        return -1;
    }
    if (bufs[8].len < (Py_ssize_t)(nslots * (long long)sizeof(Slot))) {
        PyErr_SetString(PyExc_ValueError, "model: the vocabulary table is too small");
        return -1;
    }
    PyObject *prefix = PyTuple_GET_ITEM(o_model, NFIELDS - 1);
    if (!PyBytes_Check(prefix)) {
        PyErr_SetString(PyExc_TypeError, "model: the label prefix must be bytes");
        return -1;
    }
    m->label_prefix = (const uint8_t *)PyBytes_AS_STRING(prefix);
    m->label_prefix_len = PyBytes_GET_SIZE(prefix);
    return 0;
}

/* texts + offsets checked against n outputs of out_size bytes each; *longest: the longest text */
static int check_batch(Py_buffer *tb, Py_buffer *ob, Py_ssize_t out_len, Py_ssize_t out_size, Py_ssize_t *n, Py_ssize_t *longest) {
    *n = ob->len / (Py_ssize_t)sizeof(int64_t) - 1;
    const int64_t *off = ob->buf;
    int ok = *n >= 0 && out_len >= *n * out_size;
    *longest = 0;
    for (Py_ssize_t i = 0; ok && i < *n; i++) {
        if (off[i] < 0 || off[i + 1] < off[i] || off[i + 1] > tb->len) ok = 0;
        else if (off[i + 1] - off[i] > *longest) *longest = off[i + 1] - off[i];
    }
    if (!ok) PyErr_SetString(PyExc_ValueError, "texts, offsets and outputs do not fit together");
    return ok ? 0 : -1;
}

/* the path from the root to the label's leaf (hierarchical softmax) into path (root first), its length into *depth */
static int label_path(const Model *m, int32_t label, int32_t *path, int32_t *depth) {
    int32_t nodes = 2 * m->osz - 1, node = label, d = 0;
    int32_t *up = path + m->osz + 1; /* scratch: leaf to root */
    while (node != nodes - 1) {
        int32_t parent = -1;
        for (int32_t p = m->osz; p < nodes; p++)
            if (m->left[p] == node || m->right[p] == node) {
                parent = p;
                break;
            }
        if (parent < 0 || d >= m->osz) {
            PyErr_SetString(PyExc_ValueError, "model: the label is not in the tree");
            return -1;
        }
        up[d++] = node;
        node = parent;
    }
    up[d++] = node;
    for (int32_t i = 0; i < d; i++) path[i] = up[d - 1 - i];
    *depth = d;
    return 0;
}

/* predict (top1 = 1) and label_probs (top1 = 0): the arguments checked, the batch run without the GIL */
static PyObject *batch(PyObject *args, int want_top1) {
    PyObject *o_text, *o_off, *o_model, *o_label = NULL, *o_prob;
    int label = -1;
    int ok = want_top1 ? PyArg_ParseTuple(args, "OOO!OO", &o_text, &o_off, &PyTuple_Type, &o_model, &o_label, &o_prob)
                       : PyArg_ParseTuple(args, "OOO!iO", &o_text, &o_off, &PyTuple_Type, &o_model, &label, &o_prob);
    if (!ok) return NULL;
    Model m;
    Py_buffer bufs[16];
    int nb = 0;
    PyObject *result = NULL;
    Job j = {0};
    Py_ssize_t longest;
    if (parse_model(o_model, &m, bufs, &nb) < 0) goto done;
    if (!want_top1 && (label < 0 || label >= m.osz)) {
        PyErr_SetString(PyExc_ValueError, "label: out of range");
        goto done;
    }
    Py_buffer *tb = &bufs[nb], *ob = &bufs[nb + 1], *pb = &bufs[nb + 2], *lb = &bufs[nb + 3];
    if (get_buf(o_text, tb, "texts") < 0) goto done;
    nb++;
    if (get_buf(o_off, ob, "offsets") < 0) goto done;
    nb++;
    if (get_buf(o_prob, pb, "probs") < 0) goto done;
    nb++;
    Py_ssize_t out_len = pb->len;
    if (want_top1) {
        if (get_buf(o_label, lb, "labels") < 0) goto done;
        nb++;
        if (lb->len < out_len) out_len = lb->len;
        j.labels = lb->buf;
    }
    if (check_batch(tb, ob, out_len, 4, &j.n, &longest) < 0) goto done;
    j.text = tb->buf;
    j.off = ob->buf;
    j.probs = pb->buf;
    j.label = label;
    j.buf = PyMem_Malloc(longest + 3);
    j.hashes = PyMem_Malloc((longest + 2) * sizeof(int32_t));
    j.hidden = PyMem_Malloc(m.dim * sizeof(float));
    j.scratch = PyMem_Malloc((m.osz + 1) * sizeof(float));
    j.toks = PyMem_Malloc(TOKENS * sizeof(Token));
    j.rows = PyMem_Malloc(sizeof(Rows));
    int32_t *path = PyMem_Malloc(2 * (m.osz + 1) * sizeof(int32_t));
    j.path = path;
    if (!j.buf || !j.hashes || !j.toks || !j.rows || !j.hidden || !j.scratch || !path) {
        PyErr_NoMemory();
        goto done;
    }
    if (!want_top1 && m.loss == LOSS_HS && label_path(&m, label, path, &j.depth) < 0) goto done; /* once for the batch */
    Py_BEGIN_ALLOW_THREADS;
#ifdef HAVE_AVX2_CLONE
    if (__builtin_cpu_supports("avx2")) run_avx2(&m, &j);
    else
#endif
        run_generic(&m, &j);
    Py_END_ALLOW_THREADS;
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(j.buf);
    PyMem_Free(j.hashes);
    PyMem_Free(j.toks);
    PyMem_Free(j.rows);
    PyMem_Free(j.hidden);
    PyMem_Free(j.scratch);
    PyMem_Free((void *)j.path);
    for (int i = 0; i < nb; i++) PyBuffer_Release(&bufs[i]);
    return result;
}

static PyObject *predict(PyObject *self, PyObject *args) {
    (void)self;
    return batch(args, 1);
}

static PyObject *label_probs(PyObject *self, PyObject *args) {
    (void)self;
    return batch(args, 0);
}

/* The vocabulary table the kernel looks tokens up in: every entry (vocab_bytes[offsets[i]:offsets[i+1]]) in the first free slot
 * from fastText's hash of it. slots: nslots * 4 uint32 (a power of two of slots, more than the entries), every id -1 (empty). */
static PyObject *build_vocab(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_bytes, *o_off, *o_slots;
    if (!PyArg_ParseTuple(args, "OOO", &o_bytes, &o_off, &o_slots)) return NULL;
    Py_buffer b[3];
    int nb = 0;
    PyObject *result = NULL;
    if (get_buf(o_bytes, &b[nb], "vocab_bytes") < 0) goto done;
    nb++;
    if (get_buf(o_off, &b[nb], "offsets") < 0) goto done;
    nb++;
    if (get_buf(o_slots, &b[nb], "slots") < 0) goto done;
    nb++;
    {
        const uint8_t *bytes = b[0].buf;
        const int64_t *off = b[1].buf;
        Slot *slots = b[2].buf;
        Py_ssize_t n = b[1].len / (Py_ssize_t)sizeof(int64_t) - 1, nslots = b[2].len / (Py_ssize_t)sizeof(Slot);
        int ok = n >= 0 && nslots > n && (nslots & (nslots - 1)) == 0 && b[0].len <= (Py_ssize_t)UINT32_MAX;
        for (Py_ssize_t i = 0; ok && i < n; i++) ok = off[i] >= 0 && off[i] <= off[i + 1] && off[i + 1] <= b[0].len;
        for (Py_ssize_t s = 0; ok && s < nslots; s++) ok = slots[s].id == -1;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "build_vocab: the entries, their offsets and the table do not fit together");
            goto done;
        }
        uint64_t mask = (uint64_t)nslots - 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t h = ft_hash(bytes + off[i], off[i + 1] - off[i], FNV_BASIS);
            uint64_t s = h & mask;
            while (slots[s].id >= 0) s = (s + 1) & mask;
            slots[s] = (Slot){h, (int32_t)i, (uint32_t)off[i], (uint32_t)(off[i + 1] - off[i])};
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < nb; i++) PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"predict", predict, METH_VARARGS,
     "predict(texts, offsets, model, labels, probs) -> None\n\n"
     "Top-1 prediction of the UTF-8 texts texts[offsets[i]:offsets[i+1]] (each as fastText reads one\n"
     "line: a final newline ends it) into labels (int32: the label's index, -1 for none) and probs\n"
     "(float32); model is the tuple curate.fasttext.ModelFile.kernel builds."},
    {"label_probs", label_probs, METH_VARARGS,
     "label_probs(texts, offsets, model, label, probs) -> None\n\n"
     "The probability of label (its index) for each text, as fastText's predict(k=-1, threshold=0)\n"
     "reports it (0 where it does not report the label, NaN where it predicts nothing), into probs (float32)."},
    {"build_vocab", build_vocab, METH_VARARGS,
     "build_vocab(vocab_bytes, offsets, slots) -> None\n\n"
     "Fill slots (uint32, 4 per slot: fastText's hash, entry id, offset, length; a power of two of slots,\n"
     "every id -1) with the entries vocab_bytes[offsets[i]:offsets[i+1]], open addressing by fastText's hash."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fasttext", "fastText supervised prediction (see _fasttext.c).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fasttext(void) {
    init_sigmoid_table();
    return PyModule_Create(&module);
}
