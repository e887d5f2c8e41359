/* strbuf.c: a growable string for messages and reports, and small ASCII
 * string helpers that do not depend on the locale. */
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
