/* HOOKE_DIST_PROFILE=1: what a distributed solve waits for (docs/parallel.md). The exchanges
 * (dist.c, dist_amg.c and its damg_*.c) and the sums (dist_ops.c) add their counts and seconds to
 * hk_dist_prof while it is on; around each solve the counters are cleared and rank 0 prints one
 * line with the slowest process's figures (each the largest over the processes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

hk_dprof hk_dist_prof;
static int decided; /* whether the processes have agreed on the variable */

static const char kind_letter[HK_DPROF_KINDS] = {'A', 'P', 'R', 'G'};

/* The second line: the solve's steps (enum HK_DSTEP_*), each the slowest process's. */
static void print_steps(const double *t)
{
    fprintf(stderr,
            "dist solve steps (the slowest process's wall seconds): all %.4f s; check b, x %.4f, "
            "upload %.4f, b's norm %.4f; method %.4f (first residual %.4f, first pc %.4f, "
            "iterations %.4f); true residual %.4f, last sync %.4f; download x %.4f\n",
            t[HK_DSTEP_TOTAL], t[HK_DSTEP_CHECK], t[HK_DSTEP_UPLOAD], t[HK_DSTEP_BNORM],
            t[HK_DSTEP_START] + t[HK_DSTEP_FIRST_PC] + t[HK_DSTEP_ITERATIONS], t[HK_DSTEP_START],
            t[HK_DSTEP_FIRST_PC], t[HK_DSTEP_ITERATIONS], t[HK_DSTEP_TRUE_RES],
            t[HK_DSTEP_END_SYNC], t[HK_DSTEP_DOWNLOAD]);
}

void hk_dist_profile_begin(const hk_dist *d)
{
    if (!decided) {
        /* the processes may have been given different environments: agreed once, so that
         * every process takes part in the sums of the print */
        const char *v = getenv("HOOKE_DIST_PROFILE");
        int64_t on = v && *v && strcmp(v, "0") != 0;
        if (hk_comm_max_i64(d->comm, &on, 1)) on = 0;
        hk_dist_prof.on = (int)on;
        decided = 1;
    }
    const int on = hk_dist_prof.on;
    memset(&hk_dist_prof, 0, sizeof hk_dist_prof);
    hk_dist_prof.on = on;
}

int hk_dist_profile_end(const hk_dist *d, double seconds, int iterations)
{
    if (!hk_dist_prof.on) return 0;
    enum { NK = HK_DPROF_KINDS * HK_DPROF_LEVELS, S = 4 * NK, T = S + 7, NM = T + HK_DSTEPS };
    const hk_dprof *p = &hk_dist_prof;
    double m[NM];
    memcpy(m, p->n, sizeof p->n);
    memcpy(m + NK, p->drain, sizeof p->drain);
    memcpy(m + 2 * NK, p->stage, sizeof p->stage);
    memcpy(m + 3 * NK, p->comm, sizeof p->comm);
    m[S] = p->sums;
    m[S + 1] = p->sums_drain;
    m[S + 2] = p->sums_local;
    m[S + 3] = p->sums_comm;
    m[S + 4] = seconds;
    /* this process's own totals before the maxima: the waits, and the queued work waited for */
    double w = p->sums_local + p->sums_comm, wd = p->sums_drain;
    for (int k = 0; k < NK; k++) {
        w += m[2 * NK + k] + m[3 * NK + k];
        wd += m[NK + k];
    }
    m[S + 5] = w;
    m[S + 6] = wd;
    memcpy(m + T, p->step, sizeof p->step);
    HK_CALL(hk_comm_max(d->comm, m, NM));
    if (hk_comm_rank(d->comm)) return 0;
    double n = 0, st = 0, cm = 0;
    for (int k = 0; k < NK; k++) {
        n += m[k];
        st += m[2 * NK + k];
        cm += m[3 * NK + k];
    }
    const double its = iterations > 0 ? iterations : 1;
    fprintf(stderr,
            "dist profile (%d processes, %s; the slowest process's wall seconds): solve %.4f s, "
            "%d iterations; exchanges %.0f (%.1f an iteration) %.4f s (staging %.4f, transport "
            "%.4f):",
            hk_comm_size(d->comm), hk_dist_comm_name(d), m[S + 4], iterations, n, n / its, st + cm,
            st, cm);
    int first = 1;
    for (int kind = 0; kind < HK_DPROF_KINDS; kind++)
        for (int l = 0; l < HK_DPROF_LEVELS; l++) {
            const int k = kind * HK_DPROF_LEVELS + l;
            if (m[k] == 0) continue;
            fprintf(stderr, "%s %c%d %.0f %.4f (%.4f, %.4f)", first ? "" : ",", kind_letter[kind],
                    l, m[k], m[2 * NK + k] + m[3 * NK + k], m[2 * NK + k], m[3 * NK + k]);
            first = 0;
        }
    if (first) fprintf(stderr, " none");
    fprintf(stderr,
            "; sums %.0f (%.1f an iteration) %.4f s (partial sums %.4f, transport %.4f); "
            "waited %.4f s of %.4f (%.1f %%)",
            m[S], m[S] / its, m[S + 2] + m[S + 3], m[S + 2], m[S + 3], m[S + 5], m[S + 4],
            m[S + 4] > 0 ? 100.0 * m[S + 5] / m[S + 4] : 0.0);
    /* on a device with MPI: the kernels queued before the exchanges and sums, waited for
     * apart (the GPU's work, not the exchange's) */
    if (m[S + 6] > 0) {
        double dmax = 0;
        int kmax = -1;
        for (int k = 0; k < NK; k++)
            if (m[NK + k] > dmax) dmax = m[NK + k], kmax = k;
        fprintf(stderr, "; before them the device's queued work %.4f s (sums %.4f", m[S + 6],
                m[S + 1]);
        if (kmax >= 0)
            fprintf(stderr, ", most before %c%d: %.4f", kind_letter[kmax / HK_DPROF_LEVELS],
                    kmax % HK_DPROF_LEVELS, dmax);
        fprintf(stderr, ")");
    }
    fprintf(stderr, "\n");
    print_steps(m + T);
    return 0;
}
