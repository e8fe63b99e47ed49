/* cuda_device.c - device descriptions and the cached copy and read bandwidths (see
 * cuda_device.h). The probe is kiln's own code, run as a plain child: no
 * candidate is involved. */
#include "cuda_device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"

const char *kiln_gpu_field(const char *desc, const char *key, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t k = strlen(key);
    for (const char *p = desc; p && *p;) {
        if (strncmp(p, key, k) == 0 && p[k] == '=') {
            size_t n = strcspn(p + k + 1, "|\n");
            snprintf(buf, len, "%.*s", (int)n, p + k + 1);
            break;
        }
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    return buf;
}

void kiln_gpu_limits(const char *desc, kiln_device_limits *lim)
{
    char v[64];
    kiln_device_limits_default(lim);
    long smem = atol(kiln_gpu_field(desc, "smem_optin", v, sizeof v));
    if (smem > 0)
        lim->max_smem_optin = smem;
}

/* Dense flops per clock per SM. Tensor-core figures from NVIDIA's
 * architecture whitepapers (A100: 312 TFLOP/s bf16 on 108 SMs at 1410 MHz
 * = 2048; H100 SXM: 989 TFLOP/s bf16 on 132 SMs at 1830 MHz = 4096); FMA
 * figures are 2 x the FP32 (FP64) cores per SM. */
static double flops_per_clock(int major, int minor, kiln_dtype dt)
{
    int tensor = dt == KILN_DT_F16 || dt == KILN_DT_BF16;
    if (major == 9 && minor == 0)
        return tensor ? 4096 : dt == KILN_DT_F64 ? 128 : 256;
    if (major == 8 && minor == 0)
        return tensor ? 2048 : dt == KILN_DT_F64 ? 64 : 128;
    return 0;
}

double kiln_gpu_peak_flops(const char *desc, kiln_dtype dt)
{
    char v[64];
    int major = 0, minor = 0;
    if (sscanf(kiln_gpu_field(desc, "cc", v, sizeof v), "%d.%d", &major, &minor) != 2)
        return 0;
    double sms = atof(kiln_gpu_field(desc, "sms", v, sizeof v));
    double khz = atof(kiln_gpu_field(desc, "clock_khz", v, sizeof v));
    return flops_per_clock(major, minor, dt) * sms * khz * 1e3;
}

static void cache_key(const char *desc, char *buf, size_t len)
{
    char name[128], drv[32];
    kiln_gpu_field(desc, "name", name, sizeof name);
    kiln_gpu_field(desc, "driver", drv, sizeof drv);
    snprintf(buf, len, "%s|driver=%s", name, drv);
}

static int cache_path(char *buf, size_t len, kiln_error *err)
{
    char dir[4096];
    if (kiln_state_dir(dir, sizeof dir, err) < 0)
        return -1;
    snprintf(buf, len, "%s/gpu-bandwidth.txt", dir);
    return 0;
}

/* Lines "KEY\tCOPY\tREAD" (bytes per second). A line of an older kiln has
 * no READ: it does not count, and the probe runs again. */
static int cache_lookup(const char *path, const char *key, double *copy, double *read)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t'), *end;
        if (tab && (size_t)(tab - line) == strlen(key) && strncmp(line, key, strlen(key)) == 0) {
            *copy = strtod(tab + 1, &end);
            *read = *end == '\t' ? strtod(end + 1, NULL) : 0;
            found = *copy > 0 && *read > 0 ? 0 : -1;
        }
    }
    fclose(f);
    return found;
}

static int probe(double *bw, double *rbw, char *desc_out, size_t len, kiln_error *err)
{
    char path[4096], cmd[4200], line[1024] = "";
    if (kiln_cuda_worker_path(path, sizeof path, err) < 0)
        return -1;
    snprintf(cmd, sizeof cmd, "'%s' --probe 2>&1", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return kiln_fail(err, "cannot run %s --probe: %s", path, strerror(errno));
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    char v[64];
    *bw = strtod(kiln_gpu_field(line, "copy_bw", v, sizeof v), NULL);
    *rbw = strtod(kiln_gpu_field(line, "read_bw", v, sizeof v), NULL);
    if (st != 0 || *bw <= 0 || *rbw <= 0)
        return kiln_fail(err, "the GPU bandwidth probe failed: %.300s", line);
    snprintf(desc_out, len, "%s", line);
    return 0;
}

int kiln_gpu_bandwidths(const char *desc, double *bw, double *rbw, kiln_error *err)
{
    char path[4200], key[256], got[1024], gotkey[256];
    if (cache_path(path, sizeof path, err) < 0)
        return -1;
    cache_key(desc, key, sizeof key);
    if (cache_lookup(path, key, bw, rbw) == 0)
        return 0;
    if (probe(bw, rbw, got, sizeof got, err) < 0)
        return -1;
    cache_key(got, gotkey, sizeof gotkey);
    if (strcmp(gotkey, key) != 0)   /* another device answered: do not cache */
        return 0;
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\t%.6e\t%.6e\n", key, *bw, *rbw);
        fclose(f);
    }
    return 0;
}

int kiln_gpu_bandwidth(const char *desc, double *bw, kiln_error *err)
{
    double read;
    return kiln_gpu_bandwidths(desc, bw, &read, err);
}

double kiln_gpu_mix_bandwidth(double copy, double read, double rd, double wr)
{
    double r = read > copy ? read : copy;
    double pair = rd < wr ? rd : wr;   /* read and written as a copy would */
    double s = 2 * pair / copy + (rd - pair) / r + (wr - pair) / copy;
    return s > 0 ? (rd + wr) / s : copy;
}
