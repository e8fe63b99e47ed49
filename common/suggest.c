/* suggest.c - "did you mean" (see suggest.h). */
#include "suggest.h"

#include <stdio.h>
#include <string.h>

#define KILN_SUGGEST_MAX 64

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

/* The optimal-string-alignment distance, three rows of the table. */
int kiln_edit_distance(const char *a, const char *b, int cap)
{
    int n = (int)strlen(a), m = (int)strlen(b);
    if (n >= KILN_SUGGEST_MAX || m >= KILN_SUGGEST_MAX || (n > m ? n - m : m - n) > cap)
        return cap + 1;
    int rows[3][KILN_SUGGEST_MAX + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (int j = 0; j <= m; j++)
        prev[j] = j;
    for (int i = 1; i <= n; i++) {
        cur[0] = i;
        for (int j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m] > cap ? cap + 1 : prev[m];
}

/* How far a name may be from the word: 2, and a third of its length. */
static int allowed(const char *word)
{
    int third = ((int)strlen(word) + 2) / 3;
    return third < 2 ? third : 2;
}

void kiln_suggest_init(kiln_suggestion *s, const char *word)
{
    s->word = word;
    s->best[0] = '\0';
    s->dist = allowed(word) + 1;
}

void kiln_suggest_try(kiln_suggestion *s, const char *name)
{
    if (strlen(name) >= sizeof s->best || strcmp(name, s->word) == 0)
        return;
    int d = kiln_edit_distance(s->word, name, allowed(s->word));
    if (d < s->dist) {
        snprintf(s->best, sizeof s->best, "%s", name);
        s->dist = d;
    }
}

const char *kiln_suggest_best(const kiln_suggestion *s)
{
    return s->best[0] ? s->best : NULL;
}

void kiln_suggest_flags(kiln_suggestion *s, const char *usage)
{
    for (const char *p = strstr(usage, "--"); p; p = strstr(p + 2, "--")) {
        if (p > usage && (p[-1] == '-' || (p[-1] != ' ' && p[-1] != '[' && p[-1] != '|' &&
                                           p[-1] != '(' && p[-1] != '\n')))
            continue;
        size_t n = 2;
        while (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9'))
            n++;
        char flag[KILN_SUGGEST_MAX];
        if (n <= 2 || n >= sizeof flag)
            continue;
        memcpy(flag, p, n);
        flag[n] = '\0';
        kiln_suggest_try(s, flag);
    }
}
