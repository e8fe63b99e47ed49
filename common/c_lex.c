/* c_lex.c - shared C/CUDA lexical rules (see c_lex.h). */
#include "c_lex.h"

size_t kiln_lex_literal_end(const char *s, size_t n, size_t i)
{
    char q = s[i];
    for (i++; i < n && s[i] != q && s[i] != '\n'; i++)
        if (s[i] == '\\' && i + 1 < n)
            i++;
    return i < n ? i + 1 : n;
}

size_t kiln_lex_line_comment_end(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] != '\n' || (i > 0 && s[i - 1] == '\\')))
        i++;
    return i;
}

size_t kiln_lex_block_comment_end(const char *s, size_t n, size_t i, int *closed)
{
    for (i += 2; i + 1 < n; i++)
        if (s[i] == '*' && s[i + 1] == '/') {
            if (closed)
                *closed = 1;
            return i + 2;
        }
    if (closed)
        *closed = 0;
    return n;
}
