/* lessons_rewrite.c - `kiln lessons distill --model M`: a language model
 * rewrites each group of merged near-duplicates into one lesson. It is the
 * distill's rewrite callback (knowledge/distill.c); a call that fails
 * leaves the plain merge, which the distill reports. One request per group,
 * through the search's model client (agent/llm.c: retries, backoff). */
#include "lessons_rewrite.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static const char system_prompt[] =
    "You merge near-duplicate lessons about optimizing GPU and CPU kernels into one. "
    "Answer with the merged lesson's action only: one line, at most 300 characters, "
    "keeping every measured number that matters and the direction (what helps, what "
    "to avoid). No preamble, no quotes, no markdown.";

int kiln_rewrite_setup(kiln_rewrite_ctx *r, const char *agent, const char *model,
                       const char *base_url, kiln_error *err)
{
    kiln_llm_dialect d = KILN_LLM_OPENAI;
    if (agent && strcmp(agent, "anthropic") == 0)
        d = KILN_LLM_ANTHROPIC;
    else if (agent && strcmp(agent, "openai") != 0)
        return kiln_fail(err, "--agent %s: distill asks openai or anthropic", agent);
    if (kiln_llm_config_init(&r->cfg, d, model, base_url, err) < 0)
        return -1;
    r->cfg.max_tokens = 400;
    r->cfg.max_retries = 2;
    return 0;
}

static char *user_prompt(const kiln_lesson *kept, const kiln_lesson *merged, int n)
{
    kiln_strbuf b = {0};
    kiln_sb_printf(&b, "Situation: %s\nLessons to merge:\n- %s\n", kept->situation, kept->action);
    for (int i = 0; i < n; i++)
        kiln_sb_printf(&b, "- %s\n", merged[i].action);
    kiln_sb_add(&b, "Merged action:");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The answer's first non-blank line, trimmed, into action. */
static void first_line(const char *text, char *action, size_t cap)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t n = strcspn(text, "\r\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(action, text, n);
    action[n] = '\0';
    while (n > 0 && isspace((unsigned char)action[n - 1]))
        action[--n] = '\0';
}

int kiln_rewrite_lesson(void *ctx, const kiln_lesson *kept, const kiln_lesson *merged, int n,
                        char *action, size_t cap, kiln_error *err)
{
    kiln_rewrite_ctx *r = ctx;
    char *user = user_prompt(kept, merged, n);
    if (!user)
        return kiln_fail(err, "out of memory");
    kiln_llm_request req = {.system = system_prompt, .user = user, .temperature = 0.2};
    kiln_llm_result res = {0};
    int rc = kiln_llm_complete_each(&r->cfg, &req, 1, &res, err);
    free(user);
    r->calls++;
    if (rc == 0 && !res.ok)
        rc = kiln_fail(err, "the model at %s: %s", r->cfg.base_url, res.error);
    if (rc == 0)
        first_line(res.text ? res.text : "", action, cap);
    if (rc < 0)
        r->failed++;
    kiln_llm_result_free(&res);
    return rc;
}
