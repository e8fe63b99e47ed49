/* technique.c - what a lesson names as its technique and shape class, so
 * that two lessons can be compared: a tuner's knob changes as they are
 * ("ACC 4 -> 16, ROWS 4 -> 1"), a model's hypothesis on one line and, when
 * too long, cut at a word boundary with "..." (never mid-word); and a
 * width class of the widest row a run measures (docs/knowledge.md). */
#include "lessons_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* One "NAME a -> b" knob change: an upper-case name, a value, "->", a value. */
static int knob_change(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    size_t name = i;
    while (i < n && (isupper((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
        i++;
    if (i == name || !isupper((unsigned char)s[name]))
        return 0;
    const char *arrow = NULL;
    for (size_t j = i; j + 1 < n && !arrow; j++)
        if (s[j] == '-' && s[j + 1] == '>')
            arrow = s + j;
    if (!arrow)
        return 0;
    for (const char *p = s + i; p < arrow; p++)
        if (isspace((unsigned char)*p) == 0 && !isalnum((unsigned char)*p) && *p != '.' && *p != '-')
            return 0;
    for (const char *p = arrow + 2; p < s + n; p++)
        if (isspace((unsigned char)*p) == 0 && !isalnum((unsigned char)*p) && *p != '.' && *p != '-')
            return 0;
    return 1;
}

int kiln_lesson_is_knobs(const char *h)
{
    if (!h || !*h)
        return 0;
    for (const char *p = h;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (!knob_change(p, n))
            return 0;
        if (!comma)
            return 1;
        p = comma + 1;
    }
}

/* Whitespace runs become one space; leading and trailing spaces go. */
static void squeeze(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    int space = 0;
    for (const char *p = src; *p && o + 1 < cap; p++) {
        if (isspace((unsigned char)*p)) {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < cap)
            dst[o++] = ' ';
        space = 0;
        dst[o++] = *p;
    }
    dst[o] = '\0';
}

void kiln_lesson_technique(const char *hypothesis, size_t limit, char *out, size_t cap)
{
    char line[KILN_LESSON_TEXT];
    if (cap == 0)
        return;
    squeeze(line, sizeof line, hypothesis ? hypothesis : "");
    if (limit == 0 || limit >= cap)
        limit = cap - 1;
    size_t n = strlen(line);
    if (n <= limit) {
        snprintf(out, cap, "%s", line);
        return;
    }
    /* Room for "..." after the last whole word that fits. */
    size_t end = limit >= 3 ? limit - 3 : 0;
    while (end > 0 && line[end] != ' ')
        end--;
    while (end > 0 && (line[end - 1] == ' ' || ispunct((unsigned char)line[end - 1])))
        end--;
    snprintf(out, cap, "%.*s...", (int)end, line);
}

const char *kiln_lesson_width_class(long long cols)
{
    if (cols <= 0)
        return "";
    return cols <= KILN_WIDTH_NARROW ? "narrow" : cols >= KILN_WIDTH_WIDE ? "wide" : "mid";
}

int kiln_lesson_scope_width(const char *width, char tags[][KILN_TAG_MAX], int n)
{
    if (!width || !*width)
        return n;
    snprintf(tags[n], KILN_TAG_MAX, "width/%s", width);
    return n + 1;
}
