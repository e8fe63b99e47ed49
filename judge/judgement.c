/* judgement.c - the judgements' table (see judgement.h). */
#include "judgement.h"

#include <string.h>

static const struct {
    const char *name;
    int vs_parent;
    const char *doing;
} table[KILN_NJUDGEMENTS] = {
    [KILN_JUDGE_VERDICT] = {"verdict", 1, "verifying against its parent"},
    [KILN_JUDGE_CONFIRM] = {"confirm", 1, "re-timing in a fresh worker"},
    [KILN_JUDGE_RECORD] = {"record", 0, "measuring against the task's baseline"},
    [KILN_JUDGE_RERECORD] = {"rerecord", 0,
                             "measuring against the task's baseline again, in a fresh worker"},
};

static int valid(kiln_judgement k)
{
    return (int)k >= 0 && k < KILN_NJUDGEMENTS;
}

const char *kiln_judgement_name(kiln_judgement k)
{
    return valid(k) ? table[k].name : "?";
}

int kiln_judgement_parse(const char *name)
{
    for (int k = 0; name && k < KILN_NJUDGEMENTS; k++)
        if (strcmp(name, table[k].name) == 0)
            return k;
    return -1;
}

int kiln_judgement_vs_parent(kiln_judgement k)
{
    return valid(k) && table[k].vs_parent;
}

const char *kiln_judgement_doing(kiln_judgement k)
{
    return valid(k) ? table[k].doing : "?";
}
