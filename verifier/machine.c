/* machine.c - what the CPU that ran a job is, as a kernel author needs it
 * (machine.h): the instruction-set extensions that matter for kernels, the
 * cache sizes, and the compiler that built the candidate. Read once per
 * process: none of it changes while kilnd runs. */
#include "machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_build.h"

/* The flags of /proc/cpuinfo a vectorised kernel cares about, in order. */
static const char *const k_isa[] = {
    "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512dq", "avx512bw",
    "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", NULL,
};

/* Is word one of the space-separated words of list? */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return 1;
    return 0;
}

void kiln_cpu_isa(char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0 || !strchr(line, ':'))
            continue;
        size_t u = 0;
        for (int i = 0; k_isa[i] && u < len; i++)
            if (has_word(strchr(line, ':') + 1, k_isa[i]))
                u += (size_t)snprintf(buf + u, len - u, "%s%s", u ? " " : "", k_isa[i]);
        break;
    }
    fclose(f);
}

/* "48 KiB" from sysfs's "48K". */
static void cache_size(const char *dir, const char *name, char *out, size_t len)
{
    char path[256], v[32] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f && fgets(v, sizeof v, f))
        v[strcspn(v, "\n")] = '\0';
    if (f)
        fclose(f);
    snprintf(out, len, "%s", v);
}

void kiln_cpu_caches(char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int i = 0; i < 8 && u < len; i++) {
        char dir[128], level[8], type[16], size[32];
        snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%d", i);
        cache_size(dir, "level", level, sizeof level);
        cache_size(dir, "type", type, sizeof type);
        cache_size(dir, "size", size, sizeof size);
        if (!level[0] || !size[0] || strcmp(type, "Instruction") == 0)
            continue;
        long kib = strtol(size, NULL, 10);
        char *unit = size + strspn(size, "0123456789");
        if (*unit == 'M')
            kib *= 1024;
        u += (size_t)snprintf(buf + u, len - u, "%sL%s%s %ld %s", u ? ", " : "", level,
                              strcmp(type, "Data") == 0 ? "d" : "", kib >= 1024 ? kib / 1024 : kib,
                              kib >= 1024 ? "MiB" : "KiB");
    }
}

void kiln_cpu_compiler(char *buf, size_t len)
{
    static char cached[160];
    if (!cached[0]) {
        const char *cc = kiln_cpu_cc();
        char version[96] = "";
        if (cc) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "'%s' -dumpfullversion -dumpversion 2>/dev/null", cc);
            FILE *p = popen(cmd, "r");
            if (p && fgets(version, sizeof version, p))
                version[strcspn(version, "\n")] = '\0';
            if (p)
                pclose(p);
        }
        const char *base = cc ? strrchr(cc, '/') : NULL;
        snprintf(cached, sizeof cached, "%s %s, %s", base ? base + 1 : cc ? cc : "cc",
                 version[0] ? version : "(version unknown)", KILN_CPU_CFLAGS);
    }
    snprintf(buf, len, "%s", cached);
}
