/* verdict_print.h - a verdict (its JSON form) as a table for people. */
#ifndef KILN_VERDICT_PRINT_H
#define KILN_VERDICT_PRINT_H

#include <cjson/cJSON.h>
#include <stdio.h>

void kiln_print_verdict(FILE *out, const cJSON *verdict);
/* 0 for pass, 1 for fail or suspect, 3 for anything else. */
int kiln_verdict_exit_code(const cJSON *verdict);

#endif
