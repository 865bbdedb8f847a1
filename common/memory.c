/* How much more host memory this process can take: the guard that readers and hooke run use
 * to refuse, in one sentence, an input whose declared sizes cannot fit, before allocating. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hooke/error.h"

/* A number of bytes from a one-line file ("max" or unreadable: 0). */
static double read_bytes(const char *path)
{
    FILE *f = fopen(path, "r");
    double v = 0;
    if (!f) return 0;
    if (fscanf(f, "%lf", &v) != 1) v = 0;
    fclose(f);
    return v;
}

/* The value of a "Key: N kB" line of a /proc file, in bytes; 0 when absent. */
static double proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256], fmt[64];
    double kb = 0;
    snprintf(fmt, sizeof fmt, "%s: %%lf kB", key);
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, fmt, &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

static double lower(double a, double b)
{
    return a > 0 && (b <= 0 || a < b) ? a : b;
}

double hk_host_memory_available(void)
{
    /* free memory the kernel can give without swapping */
    double avail = proc_kb("/proc/meminfo", "MemAvailable");
    if (!(avail > 0)) {
        long pages = sysconf(_SC_AVPHYS_PAGES);
        avail = pages > 0 ? (double)pages * (double)sysconf(_SC_PAGESIZE) : 0;
    }
    /* a container's memory limit (cgroup v2) */
    double cg_max = read_bytes("/sys/fs/cgroup/memory.max");
    if (cg_max > 0) {
        double used = read_bytes("/sys/fs/cgroup/memory.current");
        avail = lower(avail, cg_max > used ? cg_max - used : 1);
    }
    /* ulimit -v: the address space left to this process */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY) {
        double vm = proc_kb("/proc/self/status", "VmSize");
        double lim = (double)rl.rlim_cur;
        avail = lower(avail, lim > vm ? lim - vm : 1);
    }
    return avail > 0 ? avail : 0;
}

void hk_format_bytes(char *buf, size_t n, double bytes)
{
    if (bytes >= 1e12)
        snprintf(buf, n, "%.3g TB", bytes / 1e12);
    else if (bytes >= 1e9)
        snprintf(buf, n, "%.1f GB", bytes / 1e9);
    else
        snprintf(buf, n, "%.0f MB", bytes / 1e6);
}
