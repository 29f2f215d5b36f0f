/* The compiled search core: the same search as search.py, move for move.
 *
 * solve(piles, asc, desc, redeals, returns, max_nodes, max_seconds, progress, greedy,
 *       shuffle) -> (outcome, line | None, nodes)
 * outcome is "won", "impossible" or "unknown"; line a list of macro moves
 * (src, dst, card) as in state.py. max_nodes 0 / max_seconds 0.0 mean no limit.
 * The search runs without the GIL; progress(nodes, seconds) is called with it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PILES 16
#define LIMIT 13
#define FOUNDATION 16
#define REDEAL (-1)
#define MAXMOVES 400
#define TIME_CHECK_EVERY 1024
#define PROGRESS_EVERY (1 << 17)

typedef struct { int8_t src, dst, card; } Move;

typedef struct {
    uint8_t cards[PILES][LIMIT];
    int len[PILES];
    int asc[4], desc[4];
    int redeals;
    int returns;
    uint64_t raw[2][PILES];   /* per lane: sum of ZCARD over the pile */
} State;

static uint64_t ZCARD[2][LIMIT * 52];
static uint64_t ZFOUND[2][4 * 196];
static uint64_t ZREDEAL[2][8];

static uint64_t sm_state;
static uint64_t splitmix(void) {
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void init_tables(void) {
    sm_state = 0x4352455343454E54ULL; /* "CRESCENT": the seed search.py uses */
    for (int l = 0; l < 2; l++) for (int i = 0; i < LIMIT * 52; i++) ZCARD[l][i] = splitmix();
    for (int l = 0; l < 2; l++) for (int i = 0; i < 4 * 196; i++) ZFOUND[l][i] = splitmix();
    for (int l = 0; l < 2; l++) for (int i = 0; i < 8; i++) ZREDEAL[l][i] = splitmix();
}

static inline uint64_t fmix64(uint64_t x) {
    x ^= x >> 33; x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33; x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33; return x;
}

static inline int up_of(int c) { return c - c % 13 + (c % 13 + 1) % 13; }
static inline int down_of(int c) { return c - c % 13 + (c % 13 + 12) % 13; }

static void rehash_pile(State *s, int p) {
    for (int l = 0; l < 2; l++) {
        uint64_t raw = 0;
        for (int h = 0; h < s->len[p]; h++) raw += ZCARD[l][h * 52 + s->cards[p][h]];
        s->raw[l][p] = raw;
    }
}

static void key_of(const State *s, uint64_t key[2]) {
    for (int l = 0; l < 2; l++) {
        uint64_t total = 0;
        for (int p = 0; p < PILES; p++)
            if (s->len[p]) total += fmix64(s->raw[l][p] + (uint64_t)l);
        for (int su = 0; su < 4; su++) {
            int a = s->asc[su], d = s->desc[su];
            int code = d == a + 1 ? 0 : a * 14 + d;
            total += ZFOUND[l][su * 196 + code];
        }
        total += ZREDEAL[l][s->redeals];
        key[l] = total;
    }
}

/* ------------------------------------------------------------------ moves */

static inline void push_card(State *s, int p, int c) {
    int h = s->len[p]++;
    s->cards[p][h] = (uint8_t)c;
    s->raw[0][p] += ZCARD[0][h * 52 + c];
    s->raw[1][p] += ZCARD[1][h * 52 + c];
}

static inline int pop_card(State *s, int p) {
    int h = --s->len[p];
    int c = s->cards[p][h];
    s->raw[0][p] -= ZCARD[0][h * 52 + c];
    s->raw[1][p] -= ZCARD[1][h * 52 + c];
    return c;
}

static void put_on_foundations(State *s, int c) {
    int su = c / 13, r = c % 13 + 1;
    if (s->desc[su] == s->asc[su] + 1) { s->asc[su] = r; s->desc[su] = r; }
    else if (s->asc[su] == r - 1) s->asc[su] = r;
    else s->desc[su] = r;
}

static void take_from_foundations(State *s, int c) {
    int su = c / 13, r = c % 13 + 1;
    if (s->desc[su] == s->asc[su] + 1) { s->asc[su] = r - 1; s->desc[su] = r + 1; }
    else if (s->asc[su] == r && r >= 2) s->asc[su] = r - 1; /* the ace base never leaves */
    else s->desc[su] = r + 1;
}

static void redeal(State *s, int forward) {
    for (int p = 0; p < PILES; p++) {
        int n = s->len[p];
        if (n < 2) continue;
        uint8_t *cs = s->cards[p];
        if (forward) {
            uint8_t bottom = cs[0];
            memmove(cs, cs + 1, (size_t)(n - 1));
            cs[n - 1] = bottom;
        } else {
            uint8_t top = cs[n - 1];
            memmove(cs + 1, cs, (size_t)(n - 1));
            cs[0] = top;
        }
        rehash_pile(s, p);
    }
    s->redeals += forward ? -1 : 1;
}

static void apply_move(State *s, Move m) {
    if (m.src == REDEAL) { redeal(s, 1); return; }
    if (m.src < FOUNDATION) pop_card(s, m.src); else take_from_foundations(s, m.card);
    if (m.dst < FOUNDATION) push_card(s, m.dst, m.card); else put_on_foundations(s, m.card);
}

static void undo_move(State *s, Move m) {
    if (m.src == REDEAL) { redeal(s, 0); return; }
    Move back = { m.dst, m.src, m.card };
    apply_move(s, back);
}

static int returnable(const State *s, int su, int out[11]) {
    int a = s->asc[su], d = s->desc[su], n = 0;
    if (d == a + 1) { for (int r = 2; r <= 12; r++) out[n++] = su * 13 + r - 1; return n; }
    if (a >= 2) out[n++] = su * 13 + a - 1;
    /* d == a is one card twice (two decks), unless a is the ace base: then the
       descending run has reached the ace, and that ace can leave. */
    if (d <= 12 && (d != a || a < 2)) out[n++] = su * 13 + d - 1;
    return n;
}

static int gen_moves(const State *s, Move *out) {
    int n = 0;
    for (int p = 0; p < PILES; p++) {
        if (!s->len[p]) continue;
        int c = s->cards[p][s->len[p] - 1], su = c / 13, r = c % 13 + 1;
        if (s->asc[su] == r - 1 || s->desc[su] == r + 1 || s->desc[su] == s->asc[su] + 1)
            out[n++] = (Move){ (int8_t)p, (int8_t)(FOUNDATION + su), (int8_t)c };
    }
    for (int p = 0; p < PILES; p++) {
        if (!s->len[p]) continue;
        int c = s->cards[p][s->len[p] - 1], up = up_of(c), down = down_of(c);
        for (int q = 0; q < PILES; q++) {
            if (q == p || !s->len[q] || s->len[q] >= LIMIT) continue;
            int t = s->cards[q][s->len[q] - 1];
            if (t == up || t == down) out[n++] = (Move){ (int8_t)p, (int8_t)q, (int8_t)c };
        }
    }
    if (s->returns) {
        for (int su = 0; su < 4; su++) {
            int cards[11], k = returnable(s, su, cards);
            for (int i = 0; i < k; i++) {
                int c = cards[i], up = up_of(c), down = down_of(c);
                for (int q = 0; q < PILES; q++) {
                    if (!s->len[q] || s->len[q] >= LIMIT) continue;
                    int t = s->cards[q][s->len[q] - 1];
                    if (t == up || t == down)
                        out[n++] = (Move){ (int8_t)(FOUNDATION + su), (int8_t)q, (int8_t)c };
                }
            }
        }
    }
    if (s->redeals > 0) out[n++] = (Move){ REDEAL, REDEAL, -1 };
    return n;
}

static int won(const State *s) {
    for (int p = 0; p < PILES; p++) if (s->len[p]) return 0;
    return 1;
}

/* ------------------------------------------------------------------ dead cards */

typedef struct {
    int floor;
    int frozen[52];
    int top_frozen[PILES];
    int where_p[52][2], where_h[52][2], where_n[52];
} Dead;

static int reachable_target(const Dead *x, int c) {
    for (int i = 0; i < x->where_n[c]; i++) {
        int h = x->where_h[c][i];
        if (h < x->floor || h > x->top_frozen[x->where_p[c][i]]) return 1;
    }
    return 0;
}

static int has_exit(const State *s, const Dead *x, int c) {
    int su = c / 13, r = c % 13 + 1, a = s->asc[su], d = s->desc[su];
    if (d == a + 1) return 1;
    int base = su * 13 - 1;
    if (r >= 2) {
        int lo = (a > 1 ? a : 1) + 1, hi = r < d ? r : d, blocked = 0;
        for (int k = lo; k < hi; k++) if (x->frozen[base + k] == 2) { blocked = 1; break; }
        if (!blocked) return 1;
    }
    if (r <= 12) {
        int lo = (r > a ? r : a) + 1, hi = d < 13 ? d : 13, blocked = 0;
        for (int k = lo; k < hi; k++) if (x->frozen[base + k] == 2) { blocked = 1; break; }
        if (!blocked) return 1;
    }
    return reachable_target(x, up_of(c)) || reachable_target(x, down_of(c));
}

/* search.py's dead_card: a greatest fixpoint of cards that never leave their pile. */
static int dead_card(const State *s) {
    if (s->returns) return 0;
    Dead x;
    int floor = x.floor = s->redeals;
    memset(x.frozen, 0, sizeof x.frozen);
    memset(x.where_n, 0, sizeof x.where_n);
    for (int p = 0; p < PILES; p++) {
        for (int h = 0; h < s->len[p]; h++) {
            int c = s->cards[p][h], i = x.where_n[c]++;
            x.where_p[c][i] = p; x.where_h[c][i] = h;
            if (h >= floor) x.frozen[c]++;
        }
        x.top_frozen[p] = s->len[p] > floor ? s->len[p] - 1 : -1;
    }
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int p = 0; p < PILES; p++) {
            while (x.top_frozen[p] >= floor && has_exit(s, &x, s->cards[p][x.top_frozen[p]])) {
                x.frozen[s->cards[p][x.top_frozen[p]]]--;
                x.top_frozen[p]--;
                changed = 1;
            }
        }
    }
    for (int p = 0; p < PILES; p++) if (x.top_frozen[p] >= floor) return 1;
    return 0;
}

/* ------------------------------------------------------------------ table */

typedef struct { uint64_t *slots; size_t mask, used; } Table;

static int table_init(Table *t, size_t size) {
    t->slots = calloc(size * 2, sizeof(uint64_t));
    t->mask = size - 1; t->used = 0;
    return t->slots != NULL;
}

/* 1 if inserted, 0 if present, -1 out of memory. */
static int table_insert(Table *t, const uint64_t key[2]) {
    uint64_t a = key[0], b = key[1] ? key[1] : 1;
    if ((t->used + 1) * 2 > t->mask + 1) {
        size_t size = (t->mask + 1) * 2;
        uint64_t *fresh = calloc(size * 2, sizeof(uint64_t));
        if (!fresh) return -1;
        for (size_t i = 0; i <= t->mask; i++) {
            uint64_t oa = t->slots[2 * i], ob = t->slots[2 * i + 1];
            if (!ob) continue;
            size_t j = (size_t)(oa ^ (oa >> 29)) & (size - 1);
            while (fresh[2 * j + 1]) j = (j + 1) & (size - 1);
            fresh[2 * j] = oa; fresh[2 * j + 1] = ob;
        }
        free(t->slots); t->slots = fresh; t->mask = size - 1;
    }
    size_t j = (size_t)(a ^ (a >> 29)) & t->mask;
    while (t->slots[2 * j + 1]) {
        if (t->slots[2 * j] == a && t->slots[2 * j + 1] == b) return 0;
        j = (j + 1) & t->mask;
    }
    t->slots[2 * j] = a; t->slots[2 * j + 1] = b; t->used++;
    return 1;
}

/* ------------------------------------------------------------------ search */

typedef struct { Move *moves; int n, index; Move via; int auto_from, auto_n; } Frame;

enum { WON, IMPOSSIBLE, UNKNOWN, NOMEM };

static double now_s(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    long long max_nodes; double max_seconds; PyObject *progress; PyThreadState *ts;
    int callback_failed; int greedy; double began; uint64_t shuffle; /* 0: no shuffle */
} Limits;

static int report(Limits *lim, long long nodes, double elapsed) {
    PyEval_RestoreThread(lim->ts);
    PyObject *r = PyObject_CallFunction(lim->progress, "Ld", nodes, elapsed);
    int ok = r != NULL;
    Py_XDECREF(r);
    lim->ts = PyEval_SaveThread();
    if (!ok) lim->callback_failed = 1;
    return ok;
}

/* The engine's SplitMix64 and its unbiased below(n), for the restarts' move orders. */
static uint64_t sm_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t sm_below(uint64_t *state, uint64_t n) {
    uint64_t limit = (uint64_t)0 - ((uint64_t)0 - n) % n; /* 2^64 - (2^64 mod n) */
    for (;;) {
        uint64_t x = sm_next(state);
        if (limit == 0 || x < limit) return x % n;
    }
}

/* Shuffle the moves before a trailing redeal (Fisher-Yates from the top). */
static void shuffle_moves(Move *moves, int n, uint64_t *state) {
    if (n && moves[n - 1].src == REDEAL) n--;
    for (int i = n - 1; i >= 1; i--) {
        int j = (int)sm_below(state, (uint64_t)(i + 1));
        Move t = moves[i]; moves[i] = moves[j]; moves[j] = t;
    }
}

typedef struct { Move *moves; int n, cap; } Autos;

static int autos_push(Autos *a, Move m) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 256;
        Move *grown = realloc(a->moves, sizeof(Move) * (size_t)cap);
        if (!grown) return 0;
        a->moves = grown; a->cap = cap;
    }
    a->moves[a->n++] = m;
    return 1;
}

/* Greedy mode: play every foundation move there is, pile by pile, until none is left. */
static int closure(State *s, Autos *a) {
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int p = 0; p < PILES; p++) {
            while (s->len[p]) {
                int c = s->cards[p][s->len[p] - 1], su = c / 13, r = c % 13 + 1;
                if (!(s->asc[su] == r - 1 || s->desc[su] == r + 1 || s->desc[su] == s->asc[su] + 1))
                    break;
                Move m = { (int8_t)p, (int8_t)(FOUNDATION + su), (int8_t)c };
                if (!autos_push(a, m)) return 0;
                apply_move(s, m);
                changed = 1;
            }
        }
    }
    return 1;
}

static void undo_autos(State *s, Autos *a, int from) {
    while (a->n > from) undo_move(s, a->moves[--a->n]);
}

static int search(State *s, Limits *lim, long long *nodes_out, Move **line_out, int *line_n) {
    Table table;
    if (!table_init(&table, 1 << 16)) return NOMEM;
    long long nodes = 0;
    int cap = 256, depth = 0, result = IMPOSSIBLE;
    uint64_t order = lim->shuffle;
    Autos autos = { NULL, 0, 0 };
    Frame *stack = malloc(sizeof(Frame) * (size_t)cap);
    Move *pool = malloc(sizeof(Move) * MAXMOVES * (size_t)cap);
    if (!stack || !pool) { free(stack); free(pool); free(table.slots); return NOMEM; }
    uint64_t key[2];
    if (lim->greedy && !closure(s, &autos)) { result = NOMEM; goto done; }
    int root_autos = autos.n;
    key_of(s, key);
    table_insert(&table, key);
    Move m = { 0, 0, 0 };
    if (won(s)) { depth = 0; goto found; }
    if (lim->max_nodes && nodes >= lim->max_nodes) { result = UNKNOWN; goto done; }
    nodes = 1;
    if (dead_card(s)) goto done;
    stack[0].moves = pool; stack[0].n = gen_moves(s, pool); stack[0].index = 0;
    if (lim->shuffle) shuffle_moves(pool, stack[0].n, &order);
    stack[0].via = m; stack[0].auto_from = 0; stack[0].auto_n = root_autos;
    depth = 1;
    while (depth > 0) {
        Frame *f = &stack[depth - 1];
        if (f->index == f->n) {
            if (depth > 1) { undo_autos(s, &autos, f->auto_from); undo_move(s, f->via); }
            depth--;
            continue;
        }
        m = f->moves[f->index++];
        apply_move(s, m);
        int auto_from = autos.n;
        if (lim->greedy && !closure(s, &autos)) { result = NOMEM; goto done; }
        key_of(s, key);
        int fresh = table_insert(&table, key);
        if (fresh < 0) { result = NOMEM; goto done; }
        if (!fresh) { undo_autos(s, &autos, auto_from); undo_move(s, m); continue; }
        if (won(s)) goto found;
        if (lim->max_nodes && nodes >= lim->max_nodes) { result = UNKNOWN; goto done; }
        nodes++;
        if (nodes % TIME_CHECK_EVERY == 0) {
            double elapsed = now_s() - lim->began;
            if (lim->max_seconds > 0 && elapsed > lim->max_seconds) { result = UNKNOWN; goto done; }
            if (lim->progress && nodes % PROGRESS_EVERY == 0 && !report(lim, nodes, elapsed)) {
                result = UNKNOWN; goto done;
            }
        }
        if (dead_card(s)) { undo_autos(s, &autos, auto_from); undo_move(s, m); continue; }
        if (depth == cap) {
            cap *= 2;
            Frame *ns = realloc(stack, sizeof(Frame) * (size_t)cap);
            if (!ns) { result = NOMEM; goto done; }
            stack = ns;
            Move *np = realloc(pool, sizeof(Move) * MAXMOVES * (size_t)cap);
            if (!np) { result = NOMEM; goto done; }
            if (np != pool) {
                for (int i = 0; i < depth; i++) stack[i].moves = np + MAXMOVES * i;
                pool = np;
            }
        }
        Frame *child = &stack[depth];
        child->moves = pool + MAXMOVES * depth;
        child->n = gen_moves(s, child->moves);
        if (lim->shuffle) shuffle_moves(child->moves, child->n, &order);
        child->index = 0;
        child->via = m;
        child->auto_from = auto_from;
        child->auto_n = autos.n - auto_from;
        depth++;
    }
    goto done;
found:
    /* The line: the root's automatic moves, then each frame's move and its automatic
       moves, then m and its automatic moves (all of them still on the autos stack). */
    {
        int total = autos.n + depth, k = 0;
        *line_out = malloc(sizeof(Move) * (size_t)(total ? total : 1));
        if (!*line_out) { result = NOMEM; goto done; }
        for (int i = 0; i < root_autos; i++) (*line_out)[k++] = autos.moves[i];
        int next_auto = root_autos;
        for (int i = 1; i <= depth; i++) {
            (*line_out)[k++] = i < depth ? stack[i].via : m;
            int end = i < depth ? stack[i].auto_from + stack[i].auto_n : autos.n;
            while (next_auto < end) (*line_out)[k++] = autos.moves[next_auto++];
        }
        *line_n = k;
        result = WON;
    }
done:
    *nodes_out = nodes;
    free(stack); free(pool); free(table.slots); free(autos.moves);
    return result;
}

static int read_int_list(PyObject *seq, int *out, int n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return 0;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d items", what, n);
        Py_DECREF(fast); return 0;
    }
    for (int i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(fast); return 0; }
        out[i] = (int)v;
    }
    Py_DECREF(fast);
    return 1;
}

static PyObject *py_solve(PyObject *self, PyObject *args) {
    PyObject *piles, *asc, *desc, *progress;
    int redeals, returns, greedy;
    unsigned long long shuffle;
    long long max_nodes;
    double max_seconds;
    if (!PyArg_ParseTuple(args, "OOOipLdOpK", &piles, &asc, &desc, &redeals, &returns,
                          &max_nodes, &max_seconds, &progress, &greedy, &shuffle))
        return NULL;
    State s;
    memset(&s, 0, sizeof s);
    if (redeals < 0 || redeals > 7) { PyErr_SetString(PyExc_ValueError, "redeals"); return NULL; }
    s.redeals = redeals; s.returns = returns;
    if (!read_int_list(asc, s.asc, 4, "asc") || !read_int_list(desc, s.desc, 4, "desc")) return NULL;
    PyObject *fast = PySequence_Fast(piles, "piles");
    if (!fast) return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != PILES) {
        Py_DECREF(fast); PyErr_SetString(PyExc_ValueError, "piles: expected 16"); return NULL;
    }
    for (int p = 0; p < PILES; p++) {
        PyObject *pile = PySequence_Fast(PySequence_Fast_GET_ITEM(fast, p), "pile");
        if (!pile) { Py_DECREF(fast); return NULL; }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(pile);
        if (n > LIMIT) {
            Py_DECREF(pile); Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "pile above 13 cards"); return NULL;
        }
        for (Py_ssize_t h = 0; h < n; h++) {
            long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(pile, h));
            if (c < 0 || c >= 52) {
                Py_DECREF(pile); Py_DECREF(fast);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "card out of range");
                return NULL;
            }
            s.cards[p][h] = (uint8_t)c;
        }
        s.len[p] = (int)n;
        Py_DECREF(pile);
        rehash_pile(&s, p);
    }
    Py_DECREF(fast);
    Limits lim = { max_nodes, max_seconds, progress == Py_None ? NULL : progress, NULL, 0,
                   greedy, now_s(), (uint64_t)shuffle };
    long long nodes = 0;
    Move *line = NULL;
    int line_n = 0;
    lim.ts = PyEval_SaveThread();
    int result = search(&s, &lim, &nodes, &line, &line_n);
    PyEval_RestoreThread(lim.ts);
    if (lim.callback_failed) { free(line); return NULL; }
    if (result == NOMEM) { free(line); return PyErr_NoMemory(); }
    PyObject *line_obj;
    if (result == WON) {
        line_obj = PyList_New(line_n);
        if (!line_obj) { free(line); return NULL; }
        for (int i = 0; i < line_n; i++)
            PyList_SET_ITEM(line_obj, i, Py_BuildValue("(iii)", line[i].src, line[i].dst, line[i].card));
    } else {
        line_obj = Py_NewRef(Py_None);
    }
    free(line);
    const char *names[] = { "won", "impossible", "unknown" };
    return Py_BuildValue("(sNL)", names[result], line_obj, nodes);
}

static PyMethodDef methods[] = {
    { "solve", py_solve, METH_VARARGS, "The search of server/solver/search.py, compiled." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods };

PyMODINIT_FUNC PyInit__core(void) {
    init_tables();
    return PyModule_Create(&module);
}
