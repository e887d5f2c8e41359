/* torch.c: torch.save's zip format (torch >= 1.6) for a state_dict: a
 * small pickle interpreter, safe by construction (it builds dicts, tuples
 * and tensor descriptions and calls nothing), over an allow-list of
 * globals, that reads one; and a writer of the pickle torch 1.13 writes. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "io/io.h"
#include "nn/nn.h"
#include "optim/optim.h"

/* Limits on what a file may make the reader hold: data.pkl's size, the
 * objects built, the stack and the marks.  A state_dict takes about 15
 * objects per tensor, so 4M objects are some 250,000 tensors. */
#define MAX_PICKLE (256u << 20)
#define MAX_OBJECTS (1u << 22)
#define MAX_STACK (1u << 22)

/* The storage types cltensor holds, as torch names them in a file. */
static const struct {
    const char *name;
    clt_dtype dtype;
} storages[] = {
    {"FloatStorage", CLT_FLOAT32}, {"DoubleStorage", CLT_FLOAT64}, {"HalfStorage", CLT_FLOAT16},
    {"IntStorage", CLT_INT32},     {"LongStorage", CLT_INT64},     {"ByteStorage", CLT_UINT8},
    {"BoolStorage", CLT_BOOL},     {"ComplexFloatStorage", CLT_COMPLEX64},
    {"ComplexDoubleStorage", CLT_COMPLEX128}, {"BFloat16Storage", CLT_BFLOAT16},
    {"CharStorage", CLT_INT8},     {"ShortStorage", CLT_INT16},
};

/* torch's other storage types: refused by dtype, not as unknown globals. */
static const char *const other_storages[] = {
    "QInt8Storage", "QUInt8Storage",
    "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage",
};

/* ---- objects ----------------------------------------------------------------------- */

typedef enum okind {
    O_NONE,
    O_BOOL,
    O_INT,
    O_FLOAT,
    O_STR,
    O_TUPLE,
    O_DICT,
    O_GLOBAL,
    O_STORAGE,
    O_TENSOR
} okind;

typedef enum gkind { G_ORDERED_DICT, G_REBUILD_TENSOR, G_REBUILD_PARAMETER, G_STORAGE } gkind;

typedef struct obj obj;

/* A storage: the member data/<key>, numel elements of dtype, read when a
 * tensor needs it. */
typedef struct storage {
    uint64_t member;
    clt_dtype dtype;
    int64_t numel;
    unsigned char *data;
    bool loaded;
} storage;

typedef struct tview {
    obj *storage;
    int64_t offset;
    int ndim;
    int64_t shape[CLT_MAX_DIMS], stride[CLT_MAX_DIMS];
} tview;

struct obj {
    okind kind;
    int64_t i;       /* an int, a bool; a global's gkind */
    const char *s;   /* a string, in the pickle's bytes (no NUL after it) */
    size_t len;      /* its length; items of a tuple, 2 x the items of a dict */
    obj **items;     /* a tuple's items; a dict's keys and values, alternating */
    size_t cap;
    clt_dtype dtype; /* a storage global's */
    storage *sto;
    tview *view;
};

static obj none_obj = {.kind = O_NONE}, true_obj = {.kind = O_BOOL, .i = 1},
           false_obj = {.kind = O_BOOL, .i = 0};

static const char *kind_name(const obj *o)
{
    static const char *const names[] = {"None", "a bool", "an int", "a float", "a string",
                                        "a tuple", "a dict", "a global", "a storage",
                                        "a tensor"};
    return names[o->kind];
}

typedef struct pk {
    const unsigned char *buf, *p, *end;
    const char *fn;
    char where[CLT__WHERE_SIZE]; /* "'m.pt', data.pkl" */
    obj **all;
    size_t nall, capall;
    obj **stack;
    size_t sp, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    obj **memo;
    size_t nmemo, capmemo;
    /* storages by the member that holds them */
    zip_t *za;
    const char *prefix;
    size_t prefix_len;
    obj **by_member;
    size_t nmembers;
    char path_q[CLT__QUOTE_SIZE];
} pk;

static clt_status pbad(const pk *k, const char *fmt, ...) CLT__PRINTF(2, 3);
static clt_status pbad(const pk *k, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: byte %lld: %s", k->fn, k->where,
                      (long long)(k->p - k->buf), what);
}

static clt_status nomem(const pk *k)
{
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: out of host memory", k->fn, k->where);
}

/* Grows *arr (of *cap elements of size es) to hold one more than n. */
static bool grow(void *arr, size_t *cap, size_t n, size_t es)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = clt__realloc(*(void **)arr, nc, es);
    if (p == NULL)
        return false;
    *(void **)arr = p;
    *cap = nc;
    return true;
}

static clt_status new_obj(pk *k, okind kind, obj **out)
{
    if (k->nall >= MAX_OBJECTS)
        return pbad(k, "more than %u objects (not a state_dict cltensor reads)", MAX_OBJECTS);
    obj *o = clt__calloc(1, sizeof *o);
    if (o == NULL || !grow(&k->all, &k->capall, k->nall, sizeof *k->all)) {
        free(o);
        return nomem(k);
    }
    o->kind = kind;
    k->all[k->nall++] = o;
    *out = o;
    return CLT_OK;
}

static void free_objs(pk *k)
{
    for (size_t i = 0; i < k->nall; i++) {
        obj *o = k->all[i];
        free(o->items);
        if (o->sto)
            free(o->sto->data);
        free(o->sto);
        free(o->view);
        free(o);
    }
    free(k->all);
    free(k->stack);
    free(k->marks);
    free(k->memo);
    free(k->by_member);
}

static clt_status push(pk *k, obj *o)
{
    if (k->sp >= MAX_STACK)
        return pbad(k, "the stack grows past %u entries", MAX_STACK);
    if (!grow(&k->stack, &k->capstack, k->sp, sizeof *k->stack))
        return nomem(k);
    k->stack[k->sp++] = o;
    return CLT_OK;
}

/* The stack's first entry above the innermost mark (0 without marks). */
static size_t floor_of(const pk *k)
{
    return k->nmarks ? k->marks[k->nmarks - 1] : 0;
}

static clt_status pop(pk *k, obj **o)
{
    if (k->sp <= floor_of(k))
        return pbad(k, "the stack is empty");
    *o = k->stack[--k->sp];
    return CLT_OK;
}

static clt_status top(pk *k, obj **o)
{
    if (k->sp <= floor_of(k))
        return pbad(k, "the stack is empty");
    *o = k->stack[k->sp - 1];
    return CLT_OK;
}

/* Pops to the innermost mark: the entries above it, *n of them, start at
 * *first (valid until the next push). */
static clt_status pop_mark(pk *k, obj ***first, size_t *n)
{
    if (k->nmarks == 0)
        return pbad(k, "no mark on the stack");
    size_t m = k->marks[--k->nmarks];
    *first = k->stack + m;
    *n = k->sp - m;
    k->sp = m;
    return CLT_OK;
}

static clt_status make_tuple(pk *k, obj **items, size_t n)
{
    obj *t;
    clt_status st = new_obj(k, O_TUPLE, &t);
    if (st != CLT_OK)
        return st;
    if (n > 0) {
        t->items = clt__malloc(n * sizeof *t->items);
        if (t->items == NULL)
            return nomem(k);
        memcpy(t->items, items, n * sizeof *items);
    }
    t->len = n;
    return push(k, t);
}

static clt_status dict_set(pk *k, obj *d, obj *key, obj *value)
{
    if (d->kind != O_DICT)
        return pbad(k, "setting an item of %s, not a dict", kind_name(d));
    if (!grow(&d->items, &d->cap, d->len + 1, sizeof *d->items))
        return nomem(k);
    d->items[d->len++] = key;
    d->items[d->len++] = value;
    return CLT_OK;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static clt_status need(pk *k, size_t n, const char *what)
{
    if ((size_t)(k->end - k->p) < n)
        return pbad(k, "the pickle ends inside %s (truncated?)", what);
    return CLT_OK;
}

/* ---- globals --------------------------------------------------------------------- */

static bool is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* The global module.name when the allow-list has it; else a message
 * naming it.  Nothing is imported or called. */
static clt_status global(pk *k, const char *mod, size_t ml, const char *name, size_t nl)
{
    obj *g;
    clt_status st;
    int kind = -1;
    clt_dtype dtype = CLT_FLOAT32;
    if (is(mod, ml, "collections") && is(name, nl, "OrderedDict"))
        kind = G_ORDERED_DICT;
    else if (is(mod, ml, "torch._utils") && is(name, nl, "_rebuild_tensor_v2"))
        kind = G_REBUILD_TENSOR;
    else if (is(mod, ml, "torch._utils") && is(name, nl, "_rebuild_parameter"))
        kind = G_REBUILD_PARAMETER;
    else if (is(mod, ml, "torch")) {
        for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
            if (is(name, nl, storages[i].name)) {
                kind = G_STORAGE;
                dtype = storages[i].dtype;
            }
        for (size_t i = 0; kind < 0 && i < sizeof other_storages / sizeof other_storages[0]; i++)
            if (is(name, nl, other_storages[i]))
                return pbad(k, "a tensor of torch.%s: its dtype is not one of cltensor's "
                               "(float32, float64, float16, int32, int64, uint8, bool)",
                            other_storages[i]);
    }
    if (kind < 0) {
        char qm[CLT__QUOTE_SIZE], qn[CLT__QUOTE_SIZE];
        return pbad(k, "the global '%s.%s' is not allowed (a state_dict of tensors needs "
                       "collections.OrderedDict, torch._utils._rebuild_tensor_v2 and torch's "
                       "storage types only; nothing from the file is run)",
                    clt__quote(qm, sizeof qm, mod, ml), clt__quote(qn, sizeof qn, name, nl));
    }
    if ((st = new_obj(k, O_GLOBAL, &g)) != CLT_OK)
        return st;
    g->i = kind;
    g->dtype = dtype;
    return push(k, g);
}

/* ---- calls (REDUCE), persistent ids, BUILD -------------------------------------- */

static bool int_tuple(const obj *t, int64_t *out, int *n)
{
    if (t->kind != O_TUPLE || t->len > CLT_MAX_DIMS)
        return false;
    for (size_t i = 0; i < t->len; i++) {
        if (t->items[i]->kind != O_INT || t->items[i]->i < 0)
            return false;
        out[i] = t->items[i]->i;
    }
    *n = (int)t->len;
    return true;
}

static clt_status reduce(pk *k)
{
    obj *args = NULL, *fn_obj = NULL, *o = NULL;
    clt_status st;
    if ((st = pop(k, &args)) != CLT_OK || (st = pop(k, &fn_obj)) != CLT_OK)
        return st;
    if (fn_obj->kind != O_GLOBAL || fn_obj->i == G_STORAGE)
        return pbad(k, "calling %s, which cltensor's reader does not call", kind_name(fn_obj));
    if (args->kind != O_TUPLE)
        return pbad(k, "a call's arguments are %s, not a tuple", kind_name(args));
    obj **a = args->items;
    switch ((gkind)fn_obj->i) {
    case G_ORDERED_DICT:
        if (args->len != 0)
            return pbad(k, "OrderedDict called with %zu arguments (torch writes none)",
                        args->len);
        if ((st = new_obj(k, O_DICT, &o)) != CLT_OK)
            return st;
        return push(k, o);
    case G_REBUILD_PARAMETER:
        if (args->len != 3 || a[0]->kind != O_TENSOR)
            return pbad(k, "_rebuild_parameter's arguments are not (tensor, requires_grad, "
                           "hooks)");
        return push(k, a[0]);
    case G_REBUILD_TENSOR:
        break;
    default:
        return pbad(k, "calling an unknown global");
    }
    /* _rebuild_tensor_v2(storage, storage_offset, size, stride,
     * requires_grad, backward_hooks[, metadata]) */
    if ((args->len != 6 && args->len != 7) || a[0]->kind != O_STORAGE || a[1]->kind != O_INT ||
        a[1]->i < 0 || a[4]->kind != O_BOOL || a[5]->kind != O_DICT ||
        (args->len == 7 && a[6]->kind != O_NONE && a[6]->kind != O_DICT))
        return pbad(k, "_rebuild_tensor_v2's arguments are not (storage, offset, size, stride, "
                       "requires_grad, backward_hooks)");
    tview *v = clt__calloc(1, sizeof *v);
    if (v == NULL)
        return nomem(k);
    int ns = 0, nt = 0;
    if (!int_tuple(a[2], v->shape, &ns) || !int_tuple(a[3], v->stride, &nt) || ns != nt) {
        free(v);
        return pbad(k, "a tensor's size and stride are not tuples of as many non-negative "
                       "ints, at most %d", CLT_MAX_DIMS);
    }
    v->storage = a[0];
    v->offset = a[1]->i;
    v->ndim = ns;
    if ((st = new_obj(k, O_TENSOR, &o)) != CLT_OK) {
        free(v);
        return st;
    }
    o->view = v;
    return push(k, o);
}

/* BINPERSID: ('storage', torch.FloatStorage, key, location, numel), the
 * member <prefix>/data/<key> holding numel elements. */
static clt_status persistent(pk *k)
{
    obj *pid = NULL, *o = NULL;
    clt_status st = pop(k, &pid);
    if (st != CLT_OK)
        return st;
    obj **a = pid->items;
    if (pid->kind != O_TUPLE || pid->len != 5 || a[0]->kind != O_STR ||
        !is(a[0]->s, a[0]->len, "storage") || a[1]->kind != O_GLOBAL || a[1]->i != G_STORAGE ||
        a[2]->kind != O_STR || a[3]->kind != O_STR || a[4]->kind != O_INT || a[4]->i < 0)
        return pbad(k, "a persistent id that is not ('storage', type, key, location, numel)");
    char name[CLT__QUOTE_SIZE + 64], q[CLT__QUOTE_SIZE];
    if (a[2]->len > CLT__QUOTE_SIZE || memchr(a[2]->s, '\0', a[2]->len))
        return pbad(k, "a storage key of %zu bytes", a[2]->len);
    snprintf(name, sizeof name, "%.*s/data/%.*s", (int)k->prefix_len, k->prefix,
             (int)a[2]->len, a[2]->s);
    zip_int64_t idx = zip_name_locate(k->za, name, 0);
    if (idx < 0 || (uint64_t)idx >= k->nmembers)
        return pbad(k, "storage '%s': the archive has no member '%s'",
                    clt__quote(q, sizeof q, a[2]->s, a[2]->len), name);
    clt_dtype dt = a[1]->dtype;
    int64_t numel = a[4]->i;
    obj *known = k->by_member[idx];
    if (known != NULL) {
        if (known->sto->dtype != dt || known->sto->numel != numel)
            return pbad(k, "storage '%s' is given twice, as different types or sizes",
                        clt__quote(q, sizeof q, a[2]->s, a[2]->len));
        return push(k, known);
    }
    zip_stat_t sb;
    zip_stat_init(&sb);
    if (zip_stat_index(k->za, (zip_uint64_t)idx, 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
        return pbad(k, "storage '%s': %s", clt__quote(q, sizeof q, a[2]->s, a[2]->len),
                    zip_strerror(k->za));
    uint64_t es = clt_dtype_size(dt);
    if ((uint64_t)numel > UINT64_MAX / es || sb.size != (uint64_t)numel * es)
        return pbad(k, "storage '%s': %lld elements of %llu bytes, and its member holds %llu bytes",
                    clt__quote(q, sizeof q, a[2]->s, a[2]->len), (long long)numel,
                    (unsigned long long)es, (unsigned long long)sb.size);
    if ((st = new_obj(k, O_STORAGE, &o)) != CLT_OK)
        return st;
    if ((o->sto = clt__calloc(1, sizeof *o->sto)) == NULL)
        return nomem(k);
    *o->sto = (storage){(uint64_t)idx, dt, numel, NULL, false};
    k->by_member[idx] = o;
    return push(k, o);
}

/* BUILD: an OrderedDict's state (a state_dict's _metadata attribute), read
 * and dropped; anything else is refused. */
static clt_status build(pk *k)
{
    obj *state = NULL, *o = NULL;
    clt_status st;
    if ((st = pop(k, &state)) != CLT_OK || (st = top(k, &o)) != CLT_OK)
        return st;
    if (o->kind != O_DICT || (state->kind != O_DICT && state->kind != O_NONE))
        return pbad(k, "setting the state of %s from %s (cltensor reads a dict's only)",
                    kind_name(o), kind_name(state));
    return CLT_OK;
}

/* ---- the interpreter ------------------------------------------------------------- */

static clt_status memo_put(pk *k, uint64_t idx)
{
    obj *o = NULL;
    clt_status st = top(k, &o);
    if (st != CLT_OK)
        return st;
    /* pickle numbers its memo entries in order: an index past the next one
     * is no pickler's */
    if (idx > k->nmemo)
        return pbad(k, "memo index %llu skips past %zu", (unsigned long long)idx, k->nmemo);
    if (idx == k->nmemo) {
        if (!grow(&k->memo, &k->capmemo, k->nmemo, sizeof *k->memo))
            return nomem(k);
        k->nmemo++;
    }
    k->memo[idx] = o;
    return CLT_OK;
}

static clt_status memo_get(pk *k, uint64_t idx)
{
    if (idx >= k->nmemo)
        return pbad(k, "memo index %llu was never set", (unsigned long long)idx);
    return push(k, k->memo[idx]);
}

static clt_status str(pk *k, size_t n)
{
    clt_status st = need(k, n, "a string");
    obj *o;
    if (st != CLT_OK)
        return st;
    if (!clt__utf8_valid((const char *)k->p, n))
        return pbad(k, "a string that is not UTF-8");
    if ((st = new_obj(k, O_STR, &o)) != CLT_OK)
        return st;
    o->s = (const char *)k->p;
    o->len = n;
    k->p += n;
    return push(k, o);
}

static clt_status new_int(pk *k, int64_t v)
{
    obj *o;
    clt_status st = new_obj(k, O_INT, &o);
    if (st != CLT_OK)
        return st;
    o->i = v;
    return push(k, o);
}

/* Runs the pickle to STOP; *result the object it returns. */
static clt_status run(pk *k, obj **result)
{
    clt_status st = CLT_OK;
    obj *a = NULL, *b = NULL, *c = NULL, **items = NULL;
    size_t n = 0;
    while (st == CLT_OK) {
        if (k->p >= k->end)
            return pbad(k, "the pickle ends without STOP (truncated?)");
        unsigned char op = *k->p++;
        switch (op) {
        case 0x80: /* PROTO */
            if ((st = need(k, 1, "PROTO")) == CLT_OK && (k->p[0] < 2 || k->p[0] > 5))
                st = pbad(k, "pickle protocol %u (torch writes 2)", k->p[0]);
            k->p += st == CLT_OK;
            break;
        case 0x95: /* FRAME */
            if ((st = need(k, 8, "FRAME")) == CLT_OK)
                k->p += 8;
            break;
        case 'c': { /* GLOBAL module\nname\n */
            const unsigned char *m = k->p, *nl1 = memchr(m, '\n', (size_t)(k->end - m));
            const unsigned char *nm = nl1 ? nl1 + 1 : NULL;
            const unsigned char *nl2 = nm ? memchr(nm, '\n', (size_t)(k->end - nm)) : NULL;
            if (nl2 == NULL)
                return pbad(k, "the pickle ends inside GLOBAL (truncated?)");
            k->p = nl2 + 1;
            st = global(k, (const char *)m, (size_t)(nl1 - m), (const char *)nm,
                        (size_t)(nl2 - nm));
            break;
        }
        case 0x93: /* STACK_GLOBAL */
            if ((st = pop(k, &b)) != CLT_OK || (st = pop(k, &a)) != CLT_OK)
                break;
            if (a->kind != O_STR || b->kind != O_STR)
                st = pbad(k, "STACK_GLOBAL of %s and %s, not strings", kind_name(a),
                          kind_name(b));
            else
                st = global(k, a->s, a->len, b->s, b->len);
            break;
        case 'q': /* BINPUT */
            if ((st = need(k, 1, "BINPUT")) == CLT_OK)
                st = memo_put(k, *k->p++);
            break;
        case 'r': /* LONG_BINPUT */
            if ((st = need(k, 4, "LONG_BINPUT")) == CLT_OK) {
                k->p += 4;
                st = memo_put(k, le(k->p - 4, 4));
            }
            break;
        case 0x94: /* MEMOIZE */
            st = memo_put(k, k->nmemo);
            break;
        case 'h': /* BINGET */
            if ((st = need(k, 1, "BINGET")) == CLT_OK)
                st = memo_get(k, *k->p++);
            break;
        case 'j': /* LONG_BINGET */
            if ((st = need(k, 4, "LONG_BINGET")) == CLT_OK) {
                k->p += 4;
                st = memo_get(k, le(k->p - 4, 4));
            }
            break;
        case '(': /* MARK */
            if (k->nmarks >= MAX_STACK)
                st = pbad(k, "more than %u marks", MAX_STACK);
            else if (!grow(&k->marks, &k->capmarks, k->nmarks, sizeof *k->marks))
                st = nomem(k);
            else
                k->marks[k->nmarks++] = k->sp;
            break;
        case '}': /* EMPTY_DICT */
            if ((st = new_obj(k, O_DICT, &a)) == CLT_OK)
                st = push(k, a);
            break;
        case ')': /* EMPTY_TUPLE */
            st = make_tuple(k, NULL, 0);
            break;
        case 0x85: /* TUPLE1 */
        case 0x86: /* TUPLE2 */
        case 0x87: /* TUPLE3 */
            n = (size_t)(op - 0x84);
            if (k->sp < floor_of(k) + n) {
                st = pbad(k, "TUPLE%zu with fewer entries on the stack", n);
                break;
            }
            k->sp -= n;
            st = make_tuple(k, k->stack + k->sp, n);
            break;
        case 't': /* TUPLE */
            if ((st = pop_mark(k, &items, &n)) == CLT_OK)
                st = make_tuple(k, items, n);
            break;
        case 'J': /* BININT */
            if ((st = need(k, 4, "BININT")) == CLT_OK) {
                k->p += 4;
                st = new_int(k, (int32_t)(uint32_t)le(k->p - 4, 4));
            }
            break;
        case 'K': /* BININT1 */
            if ((st = need(k, 1, "BININT1")) == CLT_OK)
                st = new_int(k, *k->p++);
            break;
        case 'M': /* BININT2 */
            if ((st = need(k, 2, "BININT2")) == CLT_OK) {
                k->p += 2;
                st = new_int(k, (int64_t)le(k->p - 2, 2));
            }
            break;
        case 0x8a: /* LONG1 */
            if ((st = need(k, 1, "LONG1")) != CLT_OK)
                break;
            n = *k->p++;
            if (n > 8) {
                st = pbad(k, "an int of %zu bytes (beyond int64)", n);
                break;
            }
            if ((st = need(k, n, "LONG1")) == CLT_OK) {
                uint64_t v = le(k->p, (int)n);
                if (n > 0 && n < 8 && (k->p[n - 1] & 0x80))
                    v |= UINT64_MAX << (8 * n); /* sign-extended */
                k->p += n;
                st = new_int(k, (int64_t)v);
            }
            break;
        case 'G': /* BINFLOAT, big-endian */
            if ((st = need(k, 8, "BINFLOAT")) == CLT_OK) {
                uint64_t bits = 0;
                for (int i = 0; i < 8; i++)
                    bits = bits << 8 | k->p[i];
                k->p += 8;
                if ((st = new_obj(k, O_FLOAT, &a)) == CLT_OK) {
                    memcpy(&a->i, &bits, 8);
                    st = push(k, a);
                }
            }
            break;
        case 'X': /* BINUNICODE */
            if ((st = need(k, 4, "BINUNICODE")) == CLT_OK) {
                k->p += 4;
                st = str(k, (size_t)le(k->p - 4, 4));
            }
            break;
        case 0x8c: /* SHORT_BINUNICODE */
            if ((st = need(k, 1, "SHORT_BINUNICODE")) == CLT_OK)
                st = str(k, *k->p++);
            break;
        case 'Q': /* BINPERSID */
            st = persistent(k);
            break;
        case 'R': /* REDUCE */
            st = reduce(k);
            break;
        case 'b': /* BUILD */
            st = build(k);
            break;
        case 's': /* SETITEM */
            if ((st = pop(k, &b)) == CLT_OK && (st = pop(k, &a)) == CLT_OK &&
                (st = top(k, &c)) == CLT_OK)
                st = dict_set(k, c, a, b);
            break;
        case 'u': /* SETITEMS */
            if ((st = pop_mark(k, &items, &n)) != CLT_OK)
                break;
            if (n % 2 != 0) {
                st = pbad(k, "SETITEMS with an odd number of entries");
                break;
            }
            if ((st = top(k, &c)) != CLT_OK)
                break;
            for (size_t i = 0; i < n && st == CLT_OK; i += 2)
                st = dict_set(k, c, items[i], items[i + 1]);
            break;
        case 0x88: /* NEWTRUE */
            st = push(k, &true_obj);
            break;
        case 0x89: /* NEWFALSE */
            st = push(k, &false_obj);
            break;
        case 'N': /* NONE */
            st = push(k, &none_obj);
            break;
        case '.': /* STOP */
            return pop(k, result);
        default:
            k->p--;
            return pbad(k, "pickle opcode 0x%02x is not one torch writes for a state_dict "
                           "(cltensor's reader refuses it)", op);
        }
    }
    return st;
}

/* ---- loading ----------------------------------------------------------------------- */

/* Reads storage s (once) from its member, whole, checking the CRC. */
static clt_status load_storage(pk *k, storage *s, const char *fn)
{
    if (s->loaded)
        return CLT_OK;
    clt__zip_member m;
    char where[CLT__WHERE_SIZE], q[CLT__QUOTE_SIZE];
    const char *name = zip_get_name(k->za, s->member, 0);
    snprintf(where, sizeof where, "%s, member '%s'", k->path_q,
             name ? CLT__QUOTE(q, name) : "?");
    clt_status st = clt__zip_member_open(k->za, s->member, fn, where, &m);
    if (st != CLT_OK)
        return st;
    size_t bytes = (size_t)m.size;
    s->data = clt__malloc(bytes ? bytes : 1);
    if (s->data == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: no host memory for %zu bytes", fn,
                        where, bytes);
    if (st == CLT_OK)
        st = clt__zip_member_read(&m, 0, s->data, bytes);
    clt_status cst = clt__zip_member_close(&m, st == CLT_OK);
    if (st == CLT_OK)
        st = cst;
    s->loaded = st == CLT_OK;
    return st;
}

/* v's values, row-major, into dst: each element at offset + sum(i * stride). */
static void gather(const tview *v, const unsigned char *src, unsigned char *dst, size_t es,
                   int64_t numel)
{
    int64_t idx[CLT_MAX_DIMS] = {0}, off = v->offset;
    for (int64_t e = 0; e < numel; e++, dst += es) {
        memcpy(dst, src + (size_t)off * es, es);
        for (int d = v->ndim - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) {
                off += v->stride[d];
                break;
            }
            off -= v->stride[d] * (v->shape[d] - 1);
            idx[d] = 0;
        }
    }
}

/* The view of entry `name` (quoted): a shape whose elements all lie
 * within its storage.  Checked for every entry before any is uploaded. */
static clt_status check_view(const pk *k, const tview *v, const char *name, const char *fn)
{
    const storage *s = v->storage->sto;
    char sh[160];
    int64_t numel = clt__io_numel(v->ndim, v->shape, clt_dtype_size(s->dtype));
    if (numel < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: tensor '%s': shape %s is too large",
                          fn, k->path_q, name, clt__shape_str(sh, sizeof sh, v->ndim, v->shape));
    if (numel == 0)
        return CLT_OK;
    /* the last element it reaches must lie within its storage */
    int64_t last = v->offset;
    bool over = false;
    for (int d = 0; d < v->ndim; d++) {
        int64_t step;
        over |= __builtin_mul_overflow(v->shape[d] - 1, v->stride[d], &step);
        over |= __builtin_add_overflow(last, step, &last);
    }
    if (over || last >= s->numel)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: tensor '%s': shape %s at offset "
                          "%lld with its strides reaches past its storage of %lld elements", fn,
                          k->path_q, name, clt__shape_str(sh, sizeof sh, v->ndim, v->shape),
                          (long long)v->offset, (long long)s->numel);
    return CLT_OK;
}

/* The tensor of entry `name`, its view checked: its values gathered and
 * uploaded to dev. */
static clt_status make_tensor(pk *k, const obj *t, const char *name, clt_device *dev,
                              const char *fn, clt_tensor **out)
{
    const tview *v = t->view;
    storage *s = v->storage->sto;
    size_t es = clt_dtype_size(s->dtype);
    char q[CLT__QUOTE_SIZE], where[CLT__WHERE_SIZE];
    snprintf(where, sizeof where, "%s: tensor '%s'", k->path_q, CLT__QUOTE(q, name));
    int64_t numel = clt__io_numel(v->ndim, v->shape, es);
    clt_status st = load_storage(k, s, fn);
    if (st != CLT_OK)
        return st;
    size_t bytes = (size_t)numel * es;
    unsigned char *vals = clt__malloc(bytes ? bytes : 1);
    if (vals == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: no host memory for %zu bytes", fn,
                          where, bytes);
    gather(v, s->data, vals, es, numel);
    int64_t b = s->dtype == CLT_BOOL ? clt__io_bad_bool(vals, bytes) : -1;
    if (b >= 0)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: bool element %lld holds the byte %u "
                        "(only 0 and 1 are bools)", fn, where, (long long)b, vals[b]);
    else if ((st = clt__tensor_from_host_in(fn, dev, s->dtype, v->ndim, v->shape, vals, out)) !=
             CLT_OK)
        clt__error_in_step(st, fn, where);
    free(vals);
    return st;
}

/* Finds the archive's folder (torch names it after the file) from
 * <folder>/data.pkl, and reads data.pkl. */
static clt_status read_pickle(pk *k, const char *fn, unsigned char **buf, size_t *len)
{
    zip_int64_t entries = zip_get_num_entries(k->za, 0);
    const char *pkl = NULL;
    zip_uint64_t idx = 0;
    for (zip_int64_t i = 0; i < entries && pkl == NULL; i++) {
        const char *name = zip_get_name(k->za, (zip_uint64_t)i, 0);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (slash && strcmp(slash, "/data.pkl") == 0) {
            pkl = name;
            idx = (zip_uint64_t)i;
            k->prefix = name;
            k->prefix_len = (size_t)(slash - name);
        }
    }
    if (pkl == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the archive has no <folder>/data.pkl: "
                          "not torch.save's format (a NumPy .npz? clt_load_npz reads it)", fn,
                          k->path_q);
    k->nmembers = (size_t)entries;
    if ((k->by_member = clt__calloc((size_t)entries, sizeof *k->by_member)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt__zip_member m;
    clt_status st = clt__zip_member_open(k->za, idx, fn, k->where, &m);
    if (st != CLT_OK)
        return st;
    if (m.size > MAX_PICKLE) {
        clt__zip_member_close(&m, false);
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %llu bytes, beyond the %u cltensor "
                          "reads", fn, k->where, (unsigned long long)m.size, MAX_PICKLE);
    }
    *len = (size_t)m.size;
    *buf = clt__malloc(*len ? *len : 1);
    if (*buf == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == CLT_OK)
        st = clt__zip_member_read(&m, 0, *buf, *len);
    clt_status cst = clt__zip_member_close(&m, st == CLT_OK);
    return st == CLT_OK ? cst : st;
}

/* Opens the archive `path` into k and reads its dict: the entries' keys
 * (strings, no U+0000, none twice) into a new block *arr of *count named
 * tensors (NULL tensors), and each tensor's view checked against its
 * storage, entry i the view d->items[2 * i + 1]; nothing uploaded.  On
 * success the caller releases buf, k's objects and archive. */
static clt_status parse(pk *k, const char *path, const char *fn, unsigned char **buf, obj **d,
                        clt_named_tensor **arr, size_t *count)
{
    size_t len = 0;
    const char **names = NULL;
    size_t *lens = NULL;
    char q[CLT__QUOTE_SIZE];
    k->fn = fn;
    CLT__QUOTE(k->path_q, path);
    snprintf(k->where, sizeof k->where, "%s, data.pkl", k->path_q);
    clt_status st = clt__zip_open(path, fn, "torch.save's format", &k->za);
    if (st != CLT_OK)
        return st;
    CLT__TRY(read_pickle(k, fn, buf, &len));
    k->buf = k->p = *buf;
    k->end = *buf + len;
    CLT__TRY(run(k, d));
    if ((*d)->kind != O_DICT)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the file holds %s, not a dict of "
                            "tensors (save model.state_dict())", fn, k->path_q,
                            kind_name(*d)));
    *count = (*d)->len / 2;
    names = clt__calloc(*count ? *count : 1, sizeof *names);
    lens = clt__calloc(*count ? *count : 1, sizeof *lens);
    if (names == NULL || lens == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t i = 0; i < *count; i++) {
        const obj *key = (*d)->items[2 * i], *val = (*d)->items[2 * i + 1];
        if (key->kind != O_STR)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key %zu of the dict is %s, "
                                "not a string", fn, k->path_q, i, kind_name(key)));
        clt__quote(q, sizeof q, key->s, key->len);
        if (memchr(key->s, '\0', key->len))
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: key '%s' holds U+0000", fn,
                                k->path_q, q));
        if (val->kind == O_DICT)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: entry '%s' is a dict: nested "
                                "dicts are not read (save a state_dict of tensors)", fn,
                                k->path_q, q));
        if (val->kind != O_TENSOR)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: entry '%s' is %s, not a tensor",
                                fn, k->path_q, q, kind_name(val)));
        CLT__TRY(check_view(k, val->view, q, fn));
        names[i] = key->s;
        lens[i] = key->len;
    }
    CLT__TRY(clt__io_named_block(*count, names, lens, fn, arr));
    for (size_t i = 0; i < *count; i++)
        names[i] = (*arr)[i].name;
    st = clt__io_no_twice(names, *count, fn, k->path_q);
    if (st != CLT_OK) {
        free(*arr);
        *arr = NULL;
    }
done:
    free(names);
    free(lens);
    return st;
}

/* Releases what parse holds. */
static void parse_free(pk *k, unsigned char *buf)
{
    free_objs(k);
    free(buf);
    clt__zip_close(k->za);
}

clt_status clt_load_torch(const char *path, clt_device *dev, clt_named_tensor **out, size_t *n)
{
    const char *fn = "clt_load_torch";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(dev, fn);
    pk k = {0};
    unsigned char *buf = NULL;
    size_t count = 0, done_n = 0;
    clt_named_tensor *arr = NULL;
    obj *d = NULL;
    clt_status st;
    CLT__TRY(parse(&k, path, fn, &buf, &d, &arr, &count));
    for (; done_n < count; done_n++) {
        CLT__TRY(make_tensor(&k, d->items[2 * done_n + 1], arr[done_n].name, dev, fn,
                             &arr[done_n].tensor));
        clt__scope_disown(arr[done_n].tensor);
    }
    *out = arr;
    *n = count;
    arr = NULL;
done:
    if (arr)
        clt_named_tensors_free(arr, done_n);
    parse_free(&k, buf);
    return st == CLT_OK ? clt__ok() : st;
}

/* The file's entry i, uploaded for clt__io_load_matched. */
typedef struct parsed {
    pk *k;
    const obj *d;
    const clt_named_tensor *arr;
} parsed;

static clt_status upload_entry(void *ctx, size_t i, clt_device *dev, clt_tensor **out)
{
    parsed *p = ctx;
    return make_tensor(p->k, p->d->items[2 * i + 1], p->arr[i].name, dev, p->k->fn, out);
}

/* load_state_dict of a torch file into the n tensors of state (the
 * model's or an AveragedModel's), strictly or not, for the public call
 * fn. */
static clt_status load_state(clt_module *m, clt_named_tensor *state, size_t n,
                             const char *path, bool strict, const char *fn)
{
    clt__lazy_undo *undo = NULL;
    bool own_state = false;
    pk k = {0};
    unsigned char *buf = NULL;
    size_t count = 0, *match = NULL;
    clt_named_tensor *arr = NULL;
    clt__io_entry *e = NULL;
    obj *d = NULL;
    clt_status st;
    CLT__TRY(parse(&k, path, fn, &buf, &d, &arr, &count));
    e = clt__malloc((count ? count : 1) * sizeof *e);
    match = clt__malloc((n ? n : 1) * sizeof *match);
    if (e == NULL || match == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t i = 0; i < count; i++) {
        const tview *v = d->items[2 * i + 1]->view;
        e[i] = (clt__io_entry){arr[i].name, v->ndim, v->shape};
    }
    if (m) {
        /* the model's state, once its lazy layers have their sizes */
        CLT__TRY(clt__io_lazy_materialize(m, e, count, fn, &undo));
        CLT__TRY(clt__module_state_in(fn, m, &state, &n));
        own_state = true;
        free(match);
        match = clt__malloc((n ? n : 1) * sizeof *match);
        if (match == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    }
    CLT__TRY(clt__io_match_state(state, n, e, count, strict, match, fn, k.path_q));
    parsed p = {&k, d, arr};
    CLT__TRY(clt__io_load_matched(state, n, match, upload_entry, &p, fn, k.path_q));
done:
    clt__lazy_undo_finish(undo, st == CLT_OK);
    if (own_state)
        free(state);
    free(match);
    free(e);
    free(arr);
    parse_free(&k, buf);
    return st;
}

clt_status clt_module_load_torch(clt_module *m, const char *path, int strict)
{
    const char *fn = "clt_module_load_torch";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_status st = load_state(m, NULL, 0, path, strict != 0, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_averaged_model_load_torch(clt_averaged_model *a, const char *path)
{
    const char *fn = "clt_averaged_model_load_torch";
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    size_t n = 0;
    clt_status st = clt_averaged_model_state(a, &state, &n);
    if (st == CLT_OK)
        st = load_state(NULL, state, n, path, true, fn);
    if (st == CLT_OK)
        st = clt__averaged_model_loaded(a, fn);
    free(state);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- saving ------------------------------------------------------------------------ */

/* A growable byte buffer for the pickle. */
typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
    bool failed;
} bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n)
            nc *= 2;
        unsigned char *p = clt__realloc(b->p, nc, 1);
        if (p == NULL) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_op(bytes *b, unsigned char op)
{
    put(b, &op, 1);
}

static void put_str(bytes *b, const char *s)
{
    size_t n = strlen(s);
    unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    put(b, h, 5);
    put(b, s, n);
}

/* An int as pickle's protocol 2 writes it: BININT1, BININT2, BININT, LONG1. */
static void put_int(bytes *b, int64_t v)
{
    unsigned char h[10];
    if (v >= 0 && v < 256) {
        h[0] = 'K';
        h[1] = (unsigned char)v;
        put(b, h, 2);
    } else if (v >= 0 && v < 65536) {
        h[0] = 'M';
        h[1] = (unsigned char)v;
        h[2] = (unsigned char)(v >> 8);
        put(b, h, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        h[0] = 'J';
        for (int i = 0; i < 4; i++)
            h[1 + i] = (unsigned char)((uint64_t)v >> (8 * i));
        put(b, h, 5);
    } else {
        h[0] = 0x8a;
        h[1] = 8;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (unsigned char)((uint64_t)v >> (8 * i));
        put(b, h, 10);
    }
}

static void put_global(bytes *b, const char *mod, const char *name)
{
    put_op(b, 'c');
    put(b, mod, strlen(mod));
    put_op(b, '\n');
    put(b, name, strlen(name));
    put_op(b, '\n');
}

static void put_int_tuple(bytes *b, int n, const int64_t *v)
{
    static const unsigned char tuple_n[] = {')', 0x85, 0x86, 0x87};
    if (n > 3)
        put_op(b, '(');
    for (int i = 0; i < n; i++)
        put_int(b, v[i]);
    put_op(b, n > 3 ? 't' : tuple_n[n]);
}

/* The state_dict's _metadata attribute as torch.save pickles it: an
 * OrderedDict of {"version": v} by module path, here for the nv modules
 * whose version torch's loading reads (the others load as torch's
 * without one). */
static void put_metadata(bytes *b, const clt__module_version *versions, size_t nv)
{
    put_op(b, '}');
    put_str(b, "_metadata");
    put_global(b, "collections", "OrderedDict");
    put(b, ")R(", 3);
    for (size_t k = 0; k < nv; k++) {
        put_str(b, versions[k].path);
        put_op(b, '}');
        put_str(b, "version");
        put_int(b, versions[k].version);
        put_op(b, 's');
    }
    put(b, "usb", 3);
}

/* The pickle torch 1.13 writes for an OrderedDict of contiguous tensors,
 * tensor k in storage "k" (no memo: every global written out), with
 * _metadata when nv > 0. */
static void put_state(bytes *b, const clt_named_tensor *tensors, size_t n,
                      const clt__module_version *versions, size_t nv)
{
    put(b, "\x80\x02", 2);
    put_global(b, "collections", "OrderedDict");
    put(b, ")R", 2);
    for (size_t k = 0; k < n; k++) {
        if (k % 1000 == 0)
            put_op(b, '('); /* pickle's batches of 1000 items */
        const clt_tensor *t = tensors[k].tensor;
        const char *type = NULL;
        for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
            if (storages[i].dtype == t->dtype)
                type = storages[i].name;
        int64_t stride[CLT_MAX_DIMS], numel = 1;
        for (int d = t->ndim - 1; d >= 0; d--) {
            stride[d] = numel;
            numel *= t->shape[d];
        }
        char key[32];
        snprintf(key, sizeof key, "%zu", k);
        put_str(b, tensors[k].name);
        put_global(b, "torch._utils", "_rebuild_tensor_v2");
        put(b, "((", 2);
        put_str(b, "storage");
        put_global(b, "torch", type);
        put_str(b, key);
        put_str(b, "cpu");
        put_int(b, numel);
        put(b, "tQ", 2);
        put_int(b, 0);
        put_int_tuple(b, t->ndim, t->shape);
        put_int_tuple(b, t->ndim, stride);
        put_op(b, 0x89); /* requires_grad False */
        put_global(b, "collections", "OrderedDict");
        put(b, ")Rt", 3);
        put_op(b, 'R');
        if (k % 1000 == 999 || k + 1 == n)
            put_op(b, 'u');
    }
    if (nv > 0)
        put_metadata(b, versions, nv);
    put_op(b, '.');
}

/* What clt_save_torch does, for fn, with the state_dict's _metadata of
 * nv versions; caller is the user's code that asked. */
static clt_status save(const char *path, const clt_named_tensor *tensors, size_t n,
                       const clt__module_version *versions, size_t nv, const char *fn,
                       const void *caller)
{
    char pq[CLT__QUOTE_SIZE], q[CLT__QUOTE_SIZE], name[64];
    CLT__QUOTE(pq, path);
    clt_status st = clt__io_check_names(tensors, n, fn, pq);
    if (st != CLT_OK)
        return st;
    void **data = clt__calloc(n ? n : 1, sizeof *data);
    size_t *nbytes = clt__calloc(n ? n : 1, sizeof *nbytes);
    bytes pkl = {0};
    clt__zip_out z = {0};
    if (data == NULL || nbytes == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* Everything is read back before the file is created. */
    for (size_t k = 0; k < n; k++) {
        st = clt__io_read_tensor(tensors[k].tensor, &data[k], &nbytes[k], fn, caller);
        if (st != CLT_OK)
            CLT__TRY(clt__error_prefix(st, "%s: %s: reading tensor '%s'", fn, pq,
                                       CLT__QUOTE(q, tensors[k].name)));
    }
    put_state(&pkl, tensors, n, versions, nv);
    if (pkl.failed)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* torch 1.13's layout: data.pkl, the storages under data/, version */
    CLT__TRY(clt__zip_create(&z, path, fn));
    z.align = 64; /* torch's kFieldAlignment: torch 2 maps the storages in place */
    const void *part[1] = {pkl.p};
    size_t len[1] = {pkl.len};
    CLT__TRY(clt__zip_add(&z, "archive/data.pkl", part, len, 1, false));
    for (size_t k = 0; k < n; k++) {
        snprintf(name, sizeof name, "archive/data/%zu", k);
        part[0] = data[k];
        len[0] = nbytes[k];
        CLT__TRY(clt__zip_add(&z, name, part, len, 1, false));
    }
    part[0] = "3\n";
    len[0] = 2;
    CLT__TRY(clt__zip_add(&z, "archive/version", part, len, 1, false));
    CLT__TRY(clt__zip_commit(&z));
done:
    clt__zip_abort(&z);
    free(pkl.p);
    for (size_t k = 0; data && k < n; k++)
        free(data[k]);
    free(data);
    free(nbytes);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_save_torch(const char *path, const clt_named_tensor *tensors, size_t n)
{
    const char *fn = "clt_save_torch";
    CLT__REQUIRE_ARG(path, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(tensors, fn);
    return save(path, tensors, n, NULL, 0, fn, __builtin_return_address(0));
}

clt_status clt_module_save_torch(const clt_module *m, const char *path)
{
    const char *fn = "clt_module_save_torch";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    clt__module_version *versions = NULL;
    size_t n = 0, nv = 0;
    clt_status st = clt__module_state_in(fn, m, &state, &n);
    if (st == CLT_OK)
        st = clt__module_versions(fn, m, &versions, &nv);
    if (st == CLT_OK)
        st = save(path, state, n, versions, nv, fn, __builtin_return_address(0));
    free(versions);
    free(state);
    return st;
}
