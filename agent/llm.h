/* llm.h - one client for OpenAI-compatible chat completions and Anthropic
 * Messages: n drafts are requested concurrently (curl multi), each with its
 * own prompt, temperature, retries and backoff.  Non-streaming, text only. */
#ifndef KILN_LLM_H
#define KILN_LLM_H

#include <stdatomic.h>

#include "kiln_error.h"

typedef enum kiln_llm_dialect { KILN_LLM_OPENAI, KILN_LLM_ANTHROPIC } kiln_llm_dialect;

typedef struct kiln_llm_config {
    kiln_llm_dialect dialect;
    char base_url[512];     /* openai: e.g. https://api.openai.com/v1 -> POST {base}/chat/completions;
                               anthropic: e.g. https://api.anthropic.com -> POST {base}/v1/messages */
    char model[128];
    char api_key[512];      /* may be empty for local servers (openai dialect only: then no Authorization header) */
    int max_tokens;         /* per answer; default 4096 */
    double temperature;     /* < 0: not sent (default -1: the server's default) */
    long timeout_ms;        /* whole request, per attempt; default 300000 */
    long connect_timeout_ms;/* default 10000 */
    int max_retries;        /* default 4 */
    double backoff_base_s;  /* default 0.5; cap 8 s; tests set it small */
    /* How the answer's length limit is named (openai dialect): 0 as the
     * model is known to want it ("max_completion_tokens" for OpenAI's
     * reasoning models, o1, o3, o4 and gpt-5, else "max_tokens"), 1
     * "max_tokens", 2 "max_completion_tokens". A model that refuses the
     * one sent is asked again at once with the other. */
    int token_field;
    /* anthropic: mark the system prompt (the part of kiln's prompt that no
     * iteration changes) for Anthropic's prompt cache; default 1 */
    int cache_system;
} kiln_llm_config;

/* Fill defaults and read the key / base URL from the environment when not set:
   OPENAI_API_KEY, OPENAI_BASE_URL (default https://api.openai.com/v1),
   ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default https://api.anthropic.com).
   base_url may be NULL or "" (then the environment / default is used).
   Returns -1 with a clear error when the key is required but missing
   (anthropic always; openai when the base URL is api.openai.com).
   Also performs curl_global_init once (not thread-safe: call it from the
   main thread before any threads start). */
int kiln_llm_config_init(kiln_llm_config *cfg, kiln_llm_dialect d, const char *model,
                         const char *base_url, kiln_error *err);

typedef struct kiln_llm_result {
    int ok;                 /* 1: text is the answer */
    char *text;             /* malloc'd answer text (openai: choices[0].message.content; anthropic: concatenated text blocks) */
    char finish[32];        /* finish_reason / stop_reason */
    long prompt_tokens, completion_tokens;   /* from usage; 0 if absent */
    double latency_s;       /* whole call including retries */
    int attempts;
    long http_status;       /* of the last attempt (0 = no HTTP response) */
    int cancelled;          /* given up by kiln_llm_complete_each_until's stop */
    int fatal;              /* retrying cannot help: 401/403 (key rejected), 400, 404, other 4xx */
    double temperature;     /* what the last attempt sent; -1: none */
    int token_field;        /* what the last attempt named the length limit by (1 or 2) */
    long cache_read_tokens, cache_write_tokens;   /* anthropic: prompt tokens read from the
                                                     cache, and written to it; 0 if absent */
    char error[512];        /* when !ok: what went wrong */
} kiln_llm_result;

/* One request of a batch: the drafts of a search iteration each get their
   own instructions and temperature, so that no two ask the same. */
typedef struct kiln_llm_request {
    const char *system;     /* may be NULL or "" */
    const char *user;
    double temperature;     /* >= 0: sent as "temperature" (both APIs); < 0: cfg->temperature */
} kiln_llm_request;

/* Ask req[0..n-1] concurrently (curl multi), each with its own retries.
   out[0..n-1] are overwritten (not freed first).  A model that refuses a
   temperature (HTTP 400 naming "temperature", as OpenAI's reasoning models
   answer) is asked again at once without one, and one that refuses
   "max_tokens" (or "max_completion_tokens") at once with the other.  Returns 0 (even if some
   failed; see out[i].ok) or -1 only when nothing could be attempted (bad
   arguments, out of memory, curl could not start). */
int kiln_llm_complete_each(const kiln_llm_config *cfg, const kiln_llm_request *req, int n,
                           kiln_llm_result *out, kiln_error *err);

/* complete_each that gives up early: while *stop (may be NULL) is 0 it is
   complete_each; once another thread sets it, every request not yet
   answered ends within about 50 ms with ok = 0, cancelled = 1 and the
   error "cancelled".  For a search that asks for the next proposals on a
   thread of their own while it verifies (harness/prefetch.c). */
int kiln_llm_complete_each_until(const kiln_llm_config *cfg, const kiln_llm_request *req, int n,
                                 kiln_llm_result *out, const atomic_int *stop, kiln_error *err);

/* n completions of the same prompt at cfg->temperature: complete_each with
   n equal requests. */
int kiln_llm_complete(const kiln_llm_config *cfg, const char *system, const char *user,
                      int n, kiln_llm_result *out, kiln_error *err);

/* Free r->text; safe on a zeroed or already freed result. */
void kiln_llm_result_free(kiln_llm_result *r);

#endif
