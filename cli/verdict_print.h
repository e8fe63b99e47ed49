/* verdict_print.h - a verdict as a table for people. */
#ifndef KILN_VERDICT_PRINT_H
#define KILN_VERDICT_PRINT_H

#include <stdio.h>

#include "verdict.h"

void kiln_print_verdict(FILE *out, const kiln_verdict *v);
/* 0 for pass, 1 for fail or suspect, 3 for anything else. */
int kiln_verdict_exit_code(const kiln_verdict *v);

#endif
