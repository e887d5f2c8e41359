/* json.c: a small strict JSON parser (RFC 8259) for the safetensors header:
 * objects, arrays, strings with every escape, integers told apart from
 * other numbers, UTF-8 checked, nesting bounded; an object's members are
 * handed out one by one, so that no tree of the whole text is built.  Nothing else in the
 * library needs JSON, so it stays this small. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

#define MAX_DEPTH 64

typedef struct parser {
    const char *start, *p, *end;
    char *err;
    size_t errlen;
    int status;   /* 0, 1 bad JSON, 2 out of memory, 3 stopped by a member callback,
                   * 4 more values than clt__json_cursor_value was allowed */
    size_t limit; /* values one clt__json_cursor_value may hold (0: any) */
    size_t count;
} parser;

static void fail(parser *ps, const char *what)
{
    if (ps->status)
        return;
    ps->status = 1;
    snprintf(ps->err, ps->errlen, "at byte %zu: %s", (size_t)(ps->p - ps->start), what);
}

static void oom(parser *ps)
{
    if (ps->status)
        return;
    ps->status = 2;
    snprintf(ps->err, ps->errlen, "out of host memory");
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

const char *clt__json_type_name(clt__json_type t)
{
    switch (t) {
    case CLT__JSON_NULL: return "null";
    case CLT__JSON_FALSE:
    case CLT__JSON_TRUE: return "a boolean";
    case CLT__JSON_NUMBER: return "a number";
    case CLT__JSON_STRING: return "a string";
    case CLT__JSON_ARRAY: return "an array";
    case CLT__JSON_OBJECT: return "an object";
    }
    return "?";
}

void clt__json_clear(clt__json *v)
{
    free(v->s);
    for (size_t k = 0; k < v->n; k++) {
        clt__json_clear(&v->items[k]);
        if (v->keys)
            free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    free(v->key_lens);
    memset(v, 0, sizeof *v);
}


/* ---- strings ------------------------------------------------------------------ */

typedef struct buf {
    char *d;
    size_t len, cap;
} buf;

static bool put(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = clt__realloc(b->d, cap, 1);
        if (d == NULL)
            return false;
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->len, s, n);
    b->len += n;
    b->d[b->len] = '\0';
    return true;
}

static size_t utf8_encode(uint32_t c, char *o)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

static int hex4(parser *ps, uint32_t *out)
{
    if (ps->end - ps->p < 4) {
        fail(ps, "a \\u escape needs four hex digits");
        return 0;
    }
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char c = ps->p[k];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) {
            fail(ps, "a \\u escape needs four hex digits");
            return 0;
        }
        v = v * 16 + (uint32_t)d;
    }
    ps->p += 4;
    *out = v;
    return 1;
}

/* At the opening quote; the decoded string goes to *s (malloc'd). */
static int parse_string(parser *ps, char **s, size_t *len)
{
    buf b = {0};
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "unterminated string");
            goto bad;
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            fail(ps, "a control character in a string (escape it)");
            goto bad;
        }
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) {
                fail(ps, "unterminated string");
                goto bad;
            }
            char e = *ps->p++, o[4];
            size_t on = 1;
            switch (e) {
            case '"': o[0] = '"'; break;
            case '\\': o[0] = '\\'; break;
            case '/': o[0] = '/'; break;
            case 'b': o[0] = '\b'; break;
            case 'f': o[0] = '\f'; break;
            case 'n': o[0] = '\n'; break;
            case 'r': o[0] = '\r'; break;
            case 't': o[0] = '\t'; break;
            case 'u': {
                uint32_t cp, lo;
                if (!hex4(ps, &cp))
                    goto bad;
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail(ps, "a lone low surrogate in a \\u escape");
                    goto bad;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        fail(ps, "a high surrogate without its low surrogate");
                        goto bad;
                    }
                    ps->p += 2;
                    if (!hex4(ps, &lo))
                        goto bad;
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        fail(ps, "a high surrogate without its low surrogate");
                        goto bad;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                on = utf8_encode(cp, o);
                break;
            }
            default:
                ps->p--;
                fail(ps, "an unknown escape in a string");
                goto bad;
            }
            if (!put(&b, o, on)) {
                oom(ps);
                goto bad;
            }
            continue;
        }
        size_t n = clt__utf8_len(ps->p, ps->end);
        if (n == 0) {
            fail(ps, "a string that is not valid UTF-8");
            goto bad;
        }
        if (!put(&b, ps->p, n)) {
            oom(ps);
            goto bad;
        }
        ps->p += n;
    }
    if (b.d == NULL && !put(&b, "", 0)) {
        oom(ps);
        goto bad;
    }
    *s = b.d;
    *len = b.len;
    return 1;
bad:
    free(b.d);
    return 0;
}

/* ---- values ------------------------------------------------------------------- */

static int parse_value(parser *ps, clt__json *v, int depth);

static int grow(parser *ps, clt__json *v, bool object)
{
    if (v->n < v->cap)
        return 1;
    size_t cap = v->cap ? v->cap * 2 : 4;
    clt__json *items = clt__realloc(v->items, cap, sizeof *items);
    if (items == NULL) {
        oom(ps);
        return 0;
    }
    v->items = items;
    if (object) {
        char **keys = clt__realloc(v->keys, cap, sizeof *keys);
        if (keys == NULL) {
            oom(ps);
            return 0;
        }
        v->keys = keys;
        size_t *kl = clt__realloc(v->key_lens, cap, sizeof *kl);
        if (kl == NULL) {
            oom(ps);
            return 0;
        }
        v->key_lens = kl;
    }
    v->cap = cap;
    return 1;
}

static int parse_number(parser *ps, clt__json *v)
{
    const char *q = ps->p;
    bool neg = false, integer = true, overflow = false;
    uint64_t mag = 0;
    if (q < ps->end && *q == '-') {
        neg = true;
        q++;
    }
    if (q >= ps->end || *q < '0' || *q > '9') {
        fail(ps, "a malformed number");
        return 0;
    }
    if (*q == '0') {
        q++;
        if (q < ps->end && *q >= '0' && *q <= '9') {
            ps->p = q;
            fail(ps, "a number with a leading zero");
            return 0;
        }
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9') {
            unsigned d = (unsigned)(*q - '0');
            if (mag > (UINT64_MAX - d) / 10)
                overflow = true;
            else
                mag = mag * 10 + d;
            q++;
        }
    }
    if (q < ps->end && *q == '.') {
        integer = false;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            ps->p = q;
            fail(ps, "a number needs digits after its decimal point");
            return 0;
        }
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integer = false;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            ps->p = q;
            fail(ps, "a number needs digits in its exponent");
            return 0;
        }
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    v->type = CLT__JSON_NUMBER;
    /* -0 is no integer: serde_json, as the reference reads it, makes it a
     * float */
    if (integer && neg && mag == 0)
        integer = false;
    if (integer && !overflow && mag <= (uint64_t)INT64_MAX) {
        v->is_int = true;
        v->i = neg ? -(int64_t)mag : (int64_t)mag;
    } else if (integer && !overflow && neg && mag == (uint64_t)INT64_MAX + 1) {
        v->is_int = true;
        v->i = INT64_MIN;
    }
    ps->p = q;
    return 1;
}

static int literal(parser *ps, const char *word, clt__json *v, clt__json_type t)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        fail(ps, "an unexpected character (expected a value)");
        return 0;
    }
    ps->p += n;
    v->type = t;
    return 1;
}

/* The container opening at ps->p (its first character, '{' or '['): -1
 * (failed), 0 (closed at once by close) or 1 (members follow). */
static int open_container(parser *ps, char close, int depth)
{
    if (depth >= MAX_DEPTH) {
        fail(ps, "nesting deeper than 64 levels");
        return -1;
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    return 1;
}

/* An object's key and the ':' after it.  New string in *key (free it) on
 * success; nothing on failure. */
static int object_key(parser *ps, char **key, size_t *klen)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
        fail(ps, "expected a string as an object key");
        return 0;
    }
    if (!parse_string(ps, key, klen))
        return 0;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        free(*key);
        *key = NULL;
        fail(ps, "expected ':' after an object key");
        return 0;
    }
    ps->p++;
    return 1;
}

/* What follows a member of the container closed by close: 1 (a ',': more
 * members), 0 (the close) or -1 (failed). */
static int after_member(parser *ps, char close)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        return 1;
    }
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    fail(ps, close == '}' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
    return -1;
}

static int parse_value(parser *ps, clt__json *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (ps->limit && ++ps->count > ps->limit) {
        char what[96];
        snprintf(what, sizeof what, "a value of more than %zu values", ps->limit);
        fail(ps, what);
        ps->status = 4;
        return 0;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "the text ended where a value was expected");
        return 0;
    }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        bool object = c == '{';
        char close = object ? '}' : ']';
        v->type = object ? CLT__JSON_OBJECT : CLT__JSON_ARRAY;
        int more = open_container(ps, close, depth);
        while (more > 0) {
            if (!grow(ps, v, object))
                return 0;
            if (object) {
                char *key = NULL;
                size_t klen = 0;
                if (!object_key(ps, &key, &klen))
                    return 0;
                v->keys[v->n] = key;
                v->key_lens[v->n] = klen;
                /* the key counts as a member from here, so that it is freed */
                memset(&v->items[v->n], 0, sizeof v->items[v->n]);
            }
            v->n++;
            if (!parse_value(ps, &v->items[v->n - 1], depth + 1))
                return 0;
            more = after_member(ps, close);
        }
        return more == 0;
    }
    if (c == '"') {
        v->type = CLT__JSON_STRING;
        return parse_string(ps, &v->s, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(ps, v);
    if (c == 't')
        return literal(ps, "true", v, CLT__JSON_TRUE);
    if (c == 'f')
        return literal(ps, "false", v, CLT__JSON_FALSE);
    if (c == 'n')
        return literal(ps, "null", v, CLT__JSON_NULL);
    fail(ps, "an unexpected character (expected a value)");
    return 0;
}

/* ---- objects member by member --------------------------------------------- */

struct clt__json_cursor {
    parser *ps;
    int depth;     /* of the member's value */
    bool consumed; /* the callback parsed the value */
};

/* The object at ps->p, its members handed to fn one by one (see
 * clt__json_parse_members). */
static int parse_members(parser *ps, int depth, clt__json_member_fn fn, void *ctx)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '{') {
        fail(ps, "expected an object");
        return 0;
    }
    int more = open_container(ps, '}', depth);
    while (more > 0) {
        char *key = NULL;
        size_t klen = 0;
        if (!object_key(ps, &key, &klen))
            return 0;
        skip_ws(ps);
        clt__json_cursor c = {ps, depth + 1, false};
        if (fn(ctx, &c, key, klen) != 0) {
            if (ps->status == 0)
                ps->status = 3;
            return 0;
        }
        if (ps->status)
            return 0;
        if (!c.consumed) {
            clt__json v;
            int ok = parse_value(ps, &v, depth + 1);
            clt__json_clear(&v);
            if (!ok)
                return 0;
        }
        more = after_member(ps, '}');
    }
    return more == 0;
}

int clt__json_parse_members(const char *text, size_t len, clt__json_member_fn fn, void *ctx,
                            char *err, size_t errlen)
{
    parser ps = {text, text, text + len, err, errlen, 0, 0, 0};
    if (parse_members(&ps, 0, fn, ctx)) {
        skip_ws(&ps);
        if (ps.p != ps.end)
            fail(&ps, "text after the JSON value");
    }
    return ps.status;
}

clt__json_type clt__json_cursor_type(const clt__json_cursor *c)
{
    const parser *ps = c->ps;
    char ch = ps->p < ps->end ? *ps->p : '\0';
    return ch == '{' ? CLT__JSON_OBJECT
         : ch == '[' ? CLT__JSON_ARRAY
         : ch == '"' ? CLT__JSON_STRING
         : ch == 't' ? CLT__JSON_TRUE
         : ch == 'f' ? CLT__JSON_FALSE
         : ch == 'n' ? CLT__JSON_NULL : CLT__JSON_NUMBER;
}

int clt__json_cursor_value(clt__json_cursor *c, size_t max_values, clt__json *v)
{
    parser *ps = c->ps;
    memset(v, 0, sizeof *v);
    if (c->consumed) {
        fail(ps, "a member's value read twice");
        return ps->status;
    }
    c->consumed = true;
    ps->limit = max_values;
    ps->count = 0;
    int ok = parse_value(ps, v, c->depth);
    ps->limit = 0;
    if (!ok)
        clt__json_clear(v);
    return ok ? 0 : ps->status;
}

int clt__json_cursor_members(clt__json_cursor *c, clt__json_member_fn fn, void *ctx)
{
    parser *ps = c->ps;
    if (c->consumed) {
        fail(ps, "a member's value read twice");
        return ps->status;
    }
    c->consumed = true;
    return parse_members(ps, c->depth, fn, ctx) ? 0 : ps->status;
}

bool clt__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t k = clt__utf8_len((const char *)p, (const char *)end);
        if (k == 0)
            return false;
        p += k;
    }
    return true;
}
