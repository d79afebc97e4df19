/* fastText supervised prediction (top-1 label and its probability) for a batch of texts.
 *
 * The compiled twin of fastText 0.9.2's FastText::predictLine for the models curate loads
 * (curate.fasttext parses the file and checks that it is one of them): each
 * text is split into tokens at the bytes fastText splits at, every token is looked up in
 * the vocabulary, its character n-grams are hashed (FNV-1a over the UTF-8 bytes, each byte
 * sign-extended as fastText does), pruned and bucketed, word n-gram hashes are added, and
 * the hidden vector is the float32 sum of the rows in fastText's order, times 1/count. The
 * output layer is a hierarchical softmax searched depth first with fastText's pruning, or
 * a softmax. Same operations in the same order in float32, so the results are fastText's.
 * It is ~10x faster on character n-gram models because nothing is allocated per token; on word-bigram models
 * (DCLM's) the random reads of input rows dominate, and the rows of a line are summed from a queue with the next
 * ones prefetched (same order, same sums). It also gives one label's probability as predict(k=-1) reports it
 * (softmax, one-vs-all with fastText's sigmoid table, hierarchical softmax along the label's path). Needs only Python.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { LOSS_SOFTMAX = 0, LOSS_HS = 1, LOSS_OVA = 2 };

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
    /* the vocabulary: open addressing by fastText's hash; slot -> entry id or -1 */
    const int32_t *slots;
    int64_t nslots;
    const uint8_t *vocab_bytes;
    const int64_t *vocab_offsets;
    const int8_t *vocab_types; /* 0 word, 1 label */
    int32_t eos_id;
    const uint8_t *label_prefix;
    Py_ssize_t label_prefix_len;
} Model;

static inline uint32_t ft_hash(const uint8_t *s, Py_ssize_t n, uint32_t h) {
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint32_t)(int8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

static int32_t vocab_id(const Model *m, const uint8_t *w, Py_ssize_t n, uint32_t h) {
    int64_t slot = (int64_t)(h % (uint64_t)m->nslots);
    for (;;) {
        int32_t id = m->slots[slot];
        if (id < 0) return -1;
        int64_t a = m->vocab_offsets[id], b = m->vocab_offsets[id + 1];
        if (b - a == n && memcmp(m->vocab_bytes + a, w, n) == 0) return id;
        slot = (slot + 1) % m->nslots;
    }
}

static inline void sum_row(const Model *m, float *hidden, int64_t row) {
    if (m->quant) {
        const uint8_t *code = m->codes + (int64_t)m->nsubq * row;
        float norm = m->norms[row];
        for (int32_t q = 0; q < m->nsubq; q++) {
            int32_t d = q == m->nsubq - 1 ? m->lastdsub : m->dsub;
            const float *c = q == m->nsubq - 1 ? m->centroids + (int64_t)q * 256 * m->dsub + (int64_t)code[q] * m->lastdsub
                                               : m->centroids + ((int64_t)q * 256 + code[q]) * m->dsub;
            for (int32_t k = 0; k < d; k++) hidden[q * m->dsub + k] += norm * c[k];
        }
    } else {
        const float *r = m->input + row * m->dim;
        for (int32_t k = 0; k < m->dim; k++) hidden[k] += r[k];
    }
}

/* The rows of one line are queued and summed in the same order (so the float32 sums are fastText's), a few ahead prefetched:
 * the input matrix is read at random rows, and the loads, not the additions, are what takes the time. */
#define QUEUE 256
#define AHEAD 8
typedef struct {
    float *hidden;
    int64_t rows[QUEUE];
    int n;
} Acc;

static void flush_rows(const Model *m, Acc *acc) {
    for (int i = 0; i < acc->n; i++) {
        if (i + AHEAD < acc->n && !m->quant) {
            const float *r = m->input + acc->rows[i + AHEAD] * m->dim;
            for (int32_t k = 0; k < m->dim; k += 16) __builtin_prefetch(r + k);
        }
        sum_row(m, acc->hidden, acc->rows[i]);
    }
    acc->n = 0;
}

static inline void add_row(const Model *m, Acc *acc, int64_t row) {
    acc->rows[acc->n++] = row;
    if (acc->n == QUEUE) flush_rows(m, acc);
}

static inline void push_bucket(const Model *m, Acc *hidden, int64_t *count, int32_t h) {
    if (m->prune_size == 0 || h < 0) return;
    int64_t id = h;
    if (m->prune_size > 0) {
        id = m->prune_map[h];
        if (id < 0) return;
    }
    add_row(m, hidden, m->nwords + id);
    (*count)++;
}

/* fastText's computeSubwords over "<" + token + ">" (bytes in buf[0:n]) */
static void add_subwords(const Model *m, Acc *hidden, int64_t *count, const uint8_t *w, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((w[i] & 0xC0) == 0x80) continue;
        uint32_t h = 2166136261u;
        Py_ssize_t j = i;
        for (int32_t len = 1; j < n && len <= m->maxn; len++) {
            h = ft_hash(w + j, 1, h);
            j++;
            while (j < n && (w[j] & 0xC0) == 0x80) {
                h = ft_hash(w + j, 1, h);
                j++;
            }
            if (len >= m->minn && !(len == 1 && (i == 0 || j == n))) push_bucket(m, hidden, count, (int32_t)(h % (uint32_t)m->bucket));
        }
    }
}

static inline int is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == '\0'; }

typedef struct {
    float score;
    int32_t node;
    int have;
} Best;

static inline float std_log(float x) { return (float)log((double)x + 1e-5); }

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
    const float *row = m->output + (int64_t)(node - m->osz) * m->dim;
    float f = 0.0f;
    for (int32_t k = 0; k < m->dim; k++) f += row[k] * hidden[k];
    f = (float)(1. / (1 + expf(-f)));
    dfs(m, m->left[node], score + std_log(1.0f - f), best, hidden);
    dfs(m, m->right[node], score + std_log(f), best, hidden);
}

/* fastText's getLine + computeHidden: the hidden vector of one line (averaged); returns how many rows were summed (0: none) */
static int64_t compute_hidden(const Model *m, const uint8_t *text, Py_ssize_t len, uint8_t *buf, int32_t *hashes, float *out) {
    int64_t count = 0, nhash = 0;
    memset(out, 0, m->dim * sizeof(float));
    Acc acc_, *hidden = &acc_;
    acc_.hidden = out;
    acc_.n = 0;
    Py_ssize_t pos = 0;
    int done = 0;
    while (!done) {
        /* readWord: skip separators; a newline alone is the end-of-sentence token; the end of the text ends the line */
        Py_ssize_t start = -1, end = -1;
        int eos = 0;
        while (pos < len) {
            uint8_t c = text[pos];
            if (is_space(c)) {
                if (start < 0) {
                    pos++;
                    if (c == '\n') {
                        eos = 1;
                        break;
                    }
                    continue;
                }
                break; /* the separator stays for the next call (a newline becomes the next token) */
            }
            if (start < 0) start = pos;
            pos++;
            end = pos;
        }
        const uint8_t *w;
        Py_ssize_t wn;
        if (eos) {
            w = (const uint8_t *)"</s>";
            wn = 4;
        } else if (start >= 0) {
            w = text + start;
            wn = end - start;
        } else {
            break; /* the text ended */
        }
        uint32_t h = ft_hash(w, wn, 2166136261u);
        int32_t wid = vocab_id(m, w, wn, h);
        int type = wid >= 0 ? m->vocab_types[wid]
                            : (wn >= m->label_prefix_len && memcmp(w, m->label_prefix, m->label_prefix_len) == 0 ? 1 : 0);
        if (type == 0) {
            if (wid < 0) {
                if (!eos) {
                    buf[0] = '<';
                    memcpy(buf + 1, w, wn);
                    buf[wn + 1] = '>';
                    add_subwords(m, hidden, &count, buf, wn + 2);
                }
            } else {
                add_row(m, hidden, wid);
                count++;
                if (m->maxn > 0 && wid != m->eos_id) {
                    buf[0] = '<';
                    memcpy(buf + 1, w, wn);
                    buf[wn + 1] = '>';
                    add_subwords(m, hidden, &count, buf, wn + 2);
                }
            }
            hashes[nhash++] = (int32_t)h; /* fastText keeps word hashes as int32 */
        }
        if (eos || (wn == 4 && memcmp(w, "</s>", 4) == 0)) done = 1; /* getLine stops at the end-of-sentence token */
    }
    /* word n-grams (fastText's addWordNgrams) */
    for (int64_t i = 0; i < nhash && m->word_ngrams > 1; i++) {
        uint64_t h = (uint64_t)(int64_t)hashes[i]; /* sign-extended, as fastText's int32 -> uint64 */
        for (int64_t j = i + 1; j < nhash && j < i + m->word_ngrams; j++) {
            h = h * 116049371ULL + (uint64_t)(int64_t)hashes[j];
            push_bucket(m, hidden, &count, (int32_t)(h % (uint64_t)m->bucket));
        }
    }
    flush_rows(m, hidden);
    if (count == 0) return 0;
    float a = (float)(1.0 / (double)count);
    for (int32_t k = 0; k < m->dim; k++) out[k] *= a;
    return count;
}

static inline float dot_row(const Model *m, int64_t row, const float *hidden) {
    const float *r = m->output + row * m->dim;
    float d = 0.0f;
    for (int32_t k = 0; k < m->dim; k++) d += r[k] * hidden[k];
    return d;
}

static inline float sigmoid(float x) { return (float)(1. / (1 + expf(-x))); }

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

static int predict_one(const Model *m, const uint8_t *text, Py_ssize_t len, uint8_t *buf, int32_t *hashes, float *hidden,
                       float *scratch, int32_t *label, float *prob) {
    *label = -1;
    *prob = 0.0f;
    if (compute_hidden(m, text, len, buf, hashes, hidden) == 0) return 0; /* fastText predicts nothing for an empty line */
    if (m->loss == LOSS_HS) {
        Best best = {0.0f, -1, 0};
        dfs(m, 2 * m->osz - 2, 0.0f, &best, hidden);
        if (best.have) {
            *label = best.node;
            *prob = expf(best.score);
        }
    } else {
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
    return 0;
}

/* The probability fastText's predict(k=-1, threshold=0) reports for one label: exp(log(p + 1e-5)) as it computes it; 0 when its
 * search prunes the label (hierarchical softmax), NaN when it predicts nothing. path: the label's nodes, root first (depth nodes). */
static float label_prob_one(const Model *m, const uint8_t *text, Py_ssize_t len, uint8_t *buf, int32_t *hashes, float *hidden,
                            float *scratch, int32_t label, const int32_t *path, int32_t depth) {
    if (compute_hidden(m, text, len, buf, hashes, hidden) == 0) return NAN;
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

static int get_buf(PyObject *obj, Py_buffer *b, const char *what) {
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: a contiguous buffer is needed", what);
        return -1;
    }
    return 0;
}

/* The model tuple (curate.fasttext.ModelFile.kernel) into m; its buffers into bufs (nb of them held: release them). */
static int parse_model(PyObject *o_model, Model *m, Py_buffer *bufs, int *nb) {
    if (PyTuple_GET_SIZE(o_model) != 29) {
        PyErr_SetString(PyExc_ValueError, "model: 29 fields expected");
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
    m->nslots = ints[15];
    if (m->dim < 1 || m->dim > 4096 || m->osz < 1 || m->bucket < 1 || m->nslots < 1 || m->maxn > 64 || m->loss < LOSS_SOFTMAX ||
        m->loss > LOSS_OVA) {
        PyErr_SetString(PyExc_ValueError, "model: bad sizes");
        return -1;
    }
    const char *names[12] = {"codes", "centroids", "input", "norms", "output", "left", "right", "prune_map", "slots", "vocab_bytes",
                             "vocab_offsets", "vocab_types"};
    for (int i = 0; i < 12; i++) {
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
    m->vocab_offsets = bufs[10].buf;
    m->vocab_types = bufs[11].buf;
    if (m->loss == LOSS_HS && bufs[5].len < (Py_ssize_t)((2 * (int64_t)m->osz - 1) * sizeof(int32_t))) {
        PyErr_SetString(PyExc_ValueError, "model: the tree is too small");
        return -1;
    }
    PyObject *prefix = PyTuple_GET_ITEM(o_model, 28);
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

typedef struct {
    uint8_t *buf;
    int32_t *hashes;
    float *hidden, *scratch;
    int32_t *path;
} Scratch;

static int scratch_alloc(Scratch *s, const Model *m, Py_ssize_t longest) {
    s->buf = PyMem_Malloc(longest + 3);
    s->hashes = PyMem_Malloc((longest + 2) * sizeof(int32_t));
    s->hidden = PyMem_Malloc(m->dim * sizeof(float));
    s->scratch = PyMem_Malloc((m->osz + 1) * sizeof(float));
    s->path = PyMem_Malloc(2 * (m->osz + 1) * sizeof(int32_t));
    if (!s->buf || !s->hashes || !s->hidden || !s->scratch || !s->path) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void scratch_free(Scratch *s) {
    PyMem_Free(s->buf);
    PyMem_Free(s->hashes);
    PyMem_Free(s->hidden);
    PyMem_Free(s->scratch);
    PyMem_Free(s->path);
}

static void release(Py_buffer *bufs, int nb) {
    for (int i = 0; i < nb; i++) PyBuffer_Release(&bufs[i]);
}

static PyObject *predict(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_text, *o_off, *o_model, *o_label, *o_prob;
    if (!PyArg_ParseTuple(args, "OOO!OO", &o_text, &o_off, &PyTuple_Type, &o_model, &o_label, &o_prob)) return NULL;
    Model m;
    Py_buffer bufs[16];
    int nb = 0;
    PyObject *result = NULL;
    Scratch s = {0};
    Py_ssize_t n, longest;
    if (parse_model(o_model, &m, bufs, &nb) < 0) goto done;
    if (get_buf(o_text, &bufs[nb], "texts") < 0) goto done;
    Py_buffer *tb = &bufs[nb++];
    if (get_buf(o_off, &bufs[nb], "offsets") < 0) goto done;
    Py_buffer *ob = &bufs[nb++];
    if (get_buf(o_label, &bufs[nb], "labels") < 0) goto done;
    Py_buffer *lb = &bufs[nb++];
    if (get_buf(o_prob, &bufs[nb], "probs") < 0) goto done;
    Py_buffer *pb = &bufs[nb++];
    if (check_batch(tb, ob, lb->len < pb->len ? lb->len : pb->len, 4, &n, &longest) < 0) goto done;
    if (scratch_alloc(&s, &m, longest) < 0) goto done;
    {
        const uint8_t *t = tb->buf;
        const int64_t *off = ob->buf;
        int32_t *labels = lb->buf;
        float *probs = pb->buf;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < n; i++)
            predict_one(&m, t + off[i], off[i + 1] - off[i], s.buf, s.hashes, s.hidden, s.scratch, labels + i, probs + i);
        Py_END_ALLOW_THREADS;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    scratch_free(&s);
    release(bufs, nb);
    return result;
}

static PyObject *label_probs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_text, *o_off, *o_model, *o_prob;
    int label;
    if (!PyArg_ParseTuple(args, "OOO!iO", &o_text, &o_off, &PyTuple_Type, &o_model, &label, &o_prob)) return NULL;
    Model m;
    Py_buffer bufs[16];
    int nb = 0;
    PyObject *result = NULL;
    Scratch s = {0};
    Py_ssize_t n, longest;
    if (parse_model(o_model, &m, bufs, &nb) < 0) goto done;
    if (label < 0 || label >= m.osz) {
        PyErr_SetString(PyExc_ValueError, "label: out of range");
        goto done;
    }
    if (get_buf(o_text, &bufs[nb], "texts") < 0) goto done;
    Py_buffer *tb = &bufs[nb++];
    if (get_buf(o_off, &bufs[nb], "offsets") < 0) goto done;
    Py_buffer *ob = &bufs[nb++];
    if (get_buf(o_prob, &bufs[nb], "probs") < 0) goto done;
    Py_buffer *pb = &bufs[nb++];
    if (check_batch(tb, ob, pb->len, 4, &n, &longest) < 0) goto done;
    if (scratch_alloc(&s, &m, longest) < 0) goto done;
    int32_t depth = 0;
    if (m.loss == LOSS_HS) { /* the path from the root to the label's leaf, found once for the batch */
        int32_t nodes = 2 * m.osz - 1, node = label;
        int32_t *up = s.path + m.osz + 1; /* scratch: leaf to root */
        while (node != nodes - 1) {
            int32_t parent = -1;
            for (int32_t p = m.osz; p < nodes; p++)
                if (m.left[p] == node || m.right[p] == node) {
                    parent = p;
                    break;
                }
            if (parent < 0 || depth >= m.osz) {
                PyErr_SetString(PyExc_ValueError, "model: the label is not in the tree");
                goto done;
            }
            up[depth++] = node;
            node = parent;
        }
        up[depth++] = node;
        for (int32_t d = 0; d < depth; d++) s.path[d] = up[depth - 1 - d];
    }
    {
        const uint8_t *t = tb->buf;
        const int64_t *off = ob->buf;
        float *probs = pb->buf;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < n; i++)
            probs[i] = label_prob_one(&m, t + off[i], off[i + 1] - off[i], s.buf, s.hashes, s.hidden, s.scratch, label, s.path, depth);
        Py_END_ALLOW_THREADS;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    scratch_free(&s);
    release(bufs, nb);
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
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fasttext", "fastText supervised prediction (see _fasttext.c).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fasttext(void) {
    init_sigmoid_table();
    return PyModule_Create(&module);
}
