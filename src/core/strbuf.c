/* strbuf.c: a growable string for messages and reports, and small ASCII
 * string helpers that do not depend on the locale. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void clt__sb_vprintf(clt__strbuf *sb, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int need = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (need < 0 || sb->failed)
        return;
    if (sb->len + (size_t)need + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 128;
        while (cap < sb->len + (size_t)need + 1)
            cap *= 2;
        char *grown = clt__realloc(sb->data, cap, 1);
        if (grown == NULL) {
            sb->failed = true;
            return;
        }
        sb->data = grown;
        sb->cap = cap;
    }
    vsnprintf(sb->data + sb->len, sb->cap - sb->len, fmt, ap);
    sb->len += (size_t)need;
}

void clt__sb_printf(clt__strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clt__sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

char *clt__sb_take(clt__strbuf *sb)
{
    char *s = sb->data;
    if (sb->failed) { /* a part missing would pass for the whole string */
        free(s);
        s = NULL;
    } else if (s == NULL) {
        s = clt__malloc(1);
        if (s)
            s[0] = '\0';
    }
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
    return s;
}

void clt__sb_free(clt__strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

int clt__strcaseeq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return 0;
    return *a == *b;
}

bool clt__strcasestr(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && lower((unsigned char)hay[i]) == lower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return n == 0;
}

/* Length of the well-formed UTF-8 sequence at p (no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. */
size_t clt__utf8_len(const char *s, const char *e)
{
    const unsigned char *p = (const unsigned char *)s, *end = (const unsigned char *)e;
    if (p >= end)
        return 0;
    unsigned c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

const char *clt__quote(char *buf, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    const char *end = s + n;
    while (s < end) {
        size_t k = clt__utf8_len(s, end);
        bool plain = k > 1 || (k == 1 && (unsigned char)*s >= 0x20 && *s != 0x7f);
        size_t need = plain ? k : 4;
        if (o + need + 4 > cap) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (plain)
            memcpy(buf + o, s, k);
        else
            snprintf(buf + o, 5, "\\x%02x", (unsigned char)*s);
        o += need;
        s += plain ? k : 1;
    }
    buf[o] = '\0';
    return buf;
}
