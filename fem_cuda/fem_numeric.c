/* The numeric stage's host side (fem_numeric.h): the kernel's variant and the element records'
 * offsets, which at millions of cells cost tens of milliseconds on one thread. Integer sums:
 * the same results on any number of threads. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fem_numeric.h"
#include "hooke/error.h"

int hk_fem_numeric_force = -1;
int hk_fem_recover_force = -1;

typedef struct variant_name {
    const char *name;
    int flag;
} variant_name;

static const variant_name numeric_names[] = {
    {"plain", 0}, {"d3", HK_FEM_NUM_D3}, {"sorted", HK_FEM_NUM_SORTED}};

static const variant_name recover_names[] = {
    {"plain", 0}, {"keep", HK_FEM_REC_KEEP}, {"huge", HK_FEM_REC_HUGE}};

/* The flags of the comma list v (names of names[0..n)); HK_ERR_ARG naming the variable var,
 * the unknown name and every known one. */
static int variant_flags(const char *var, const char *v, const variant_name *names, int n,
                         int *flags)
{
    char known[256] = "";
    for (int k = 0; k < n; k++) {
        if (k) strncat(known, k + 1 < n ? ", " : " or ", sizeof known - strlen(known) - 1);
        strncat(known, names[k].name, sizeof known - strlen(known) - 1);
    }
    *flags = 0;
    for (const char *p = v; p && *p;) {
        const size_t len = strcspn(p, ",");
        int k = 0;
        while (k < n && (strlen(names[k].name) != len || strncmp(p, names[k].name, len)))
            k++;
        HK_CHECK(len == 0 || k < n, HK_ERR_ARG,
                 "%s=%s: unknown variant '%.*s'; give a comma list of %s (docs/assembly.md), or "
                 "unset it",
                 var, v, (int)len, p, known);
        if (len) *flags |= names[k].flag;
        p += len + (p[len] == ',');
    }
    return 0;
}

int hk_fem_numeric_variant(int *flags)
{
    *flags = 0;
    if (hk_fem_numeric_force >= 0) {
        *flags = hk_fem_numeric_force;
        return 0;
    }
    const char *v = getenv("HOOKE_FEM_NUMERIC");
    /* the default: d3,sorted, the fastest measured (H200, bracket 19.3M DOFs: the numeric
     * stage 206 ms against 230 for d3 alone; docs/assembly.md); `d3` alone is the reference */
    if (!v || !*v) {
        *flags = HK_FEM_NUM_D3 | HK_FEM_NUM_SORTED;
        return 0;
    }
    return variant_flags("HOOKE_FEM_NUMERIC", v, numeric_names,
                         (int)(sizeof numeric_names / sizeof *numeric_names), flags);
}

int hk_fem_recover_variant(int *flags)
{
    *flags = 0;
    if (hk_fem_recover_force >= 0) {
        *flags = hk_fem_recover_force;
        return 0;
    }
    const char *v = getenv("HOOKE_FEM_RECOVER");
    if (!v || !*v) return 0;
    return variant_flags("HOOKE_FEM_RECOVER", v, recover_names,
                         (int)(sizeof recover_names / sizeof *recover_names), flags);
}

/* 64 fixed segments (the same hash on any number of threads), each hashed by one thread. */
#define HASH_SEGMENTS 64

static uint64_t hash_mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *b = data;
    uint64_t part[HASH_SEGMENTS];
    if (!data) return hash_mix(h, 0x6e756c6cull);
    const size_t words = bytes / 8;
#pragma omp parallel for schedule(static) if (words > ((size_t)1 << 16))
    for (int s = 0; s < HASH_SEGMENTS; s++) {
        uint64_t x = (uint64_t)s + 1;
        for (size_t k = words * s / HASH_SEGMENTS; k < words * (s + 1) / HASH_SEGMENTS; k++) {
            uint64_t w;
            memcpy(&w, b + 8 * k, 8);
            x = hash_mix(x, w);
        }
        part[s] = x;
    }
    for (int s = 0; s < HASH_SEGMENTS; s++)
        h = hash_mix(h, part[s]);
    uint64_t tail = 0;
    memcpy(&tail, b + 8 * words, bytes - 8 * words);
    return hash_mix(hash_mix(h, tail), bytes);
}

uint64_t hk_fem_mesh_hash(const hk_mesh *m, const double *node_dT)
{
    const int64_t nn = m->nnodes, ne = m->cells.n;
    uint64_t h = hash_mix(hash_mix((uint64_t)m->dim, (uint64_t)nn), (uint64_t)ne);
    h = hash_bytes(h, m->coords, (size_t)(3 * nn) * sizeof *m->coords);
    h = hash_bytes(h, m->cells.ptr, (size_t)(ne + 1) * sizeof *m->cells.ptr);
    h = hash_bytes(h, m->cells.nodes, (size_t)m->cells.ptr[ne] * sizeof *m->cells.nodes);
    h = hash_bytes(h, m->cells.type, (size_t)ne * sizeof *m->cells.type);
    h = hash_bytes(h, m->cell_region, m->cell_region ? (size_t)ne * sizeof *m->cell_region : 0);
    h = hash_mix(h, (uint64_t)m->nregions);
    return hash_bytes(h, node_dT, node_dT ? (size_t)nn * sizeof *node_dT : 0);
}

void hk_fem_touch_pages(void *data, size_t bytes)
{
    char *b = data;
    const int64_t pages = (int64_t)((bytes + 4095) / 4096);
#pragma omp parallel for schedule(static) if (pages > 64)
    for (int64_t k = 0; k < pages; k++)
        b[4096 * k] = 0;
}

void hk_fem_huge_pages(void *data, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20, b0 = (uintptr_t)data,
                    a0 = (b0 + huge - 1) & ~(huge - 1), a1 = (b0 + bytes) & ~(huge - 1);
    if (data && a1 > a0) madvise((void *)a0, a1 - a0, MADV_HUGEPAGE); /* advice: no error */
#else
    (void)data, (void)bytes;
#endif
}

int hk_fem_all_zero(const void *data, size_t bytes)
{
    const unsigned char *b = data;
    int nonzero = 0;
#pragma omp parallel for schedule(static) reduction(| : nonzero) if (bytes > ((size_t)1 << 20))
    for (int s = 0; s < HASH_SEGMENTS; s++) {
        int any = 0;
        for (size_t k = bytes * s / HASH_SEGMENTS; k < bytes * (s + 1) / HASH_SEGMENTS && !any; k++)
            any = b[k] != 0;
        nonzero |= any;
    }
    return !nonzero;
}

int hk_fem_most_nodes(const hk_mesh *m)
{
    int64_t most = 0;
    const int64_t *ptr = m->cells.ptr;
#pragma omp parallel for schedule(static) reduction(max : most) if (m->cells.n > 100000)
    for (int64_t e = 0; e < m->cells.n; e++)
        if (ptr[e + 1] - ptr[e] > most) most = ptr[e + 1] - ptr[e];
    return (int)most;
}

int hk_fem_record_offsets(const hk_mesh *m, const hk_elref *refs, const hk_fem_region *regions,
                          int axi, int with_f, const void *node_dT, int64_t *goff,
                          int64_t *biggest_out)
{
    const int64_t ne = m->cells.n;
    const int d = m->dim, nthr = omp_get_max_threads();
    int64_t *part = NULL, biggest = 0;
    HK_CALL(hk_malloc(((size_t)nthr + 1) * sizeof *part, &part));
    goff[0] = 0;
#pragma omp parallel num_threads(nthr) reduction(max : biggest)
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t e0 = ne * t / nt, e1 = ne * (t + 1) / nt;
        int64_t sum = 0;
        for (int64_t e = e0; e < e1; e++) {
            const hk_elref *r = &refs[m->cells.type[e]];
            const hk_fem_region *R = &regions[m->cell_region ? m->cell_region[e] : 0];
            const hk_fem_layout L = hk_fem_layout_of(r, d, axi, hk_fem_selective(&R->law, r->type),
                                                     hk_fem_thermal(with_f, R, node_dT));
            goff[e + 1] = L.size;
            sum += L.size;
            if (L.size > biggest) biggest = L.size;
        }
        part[t + 1] = sum;
#pragma omp barrier
#pragma omp single
        {
            part[0] = 0;
            for (int k = 1; k <= nt; k++)
                part[k] += part[k - 1];
        }
        int64_t run = part[t];
        for (int64_t e = e0; e < e1; e++) {
            run += goff[e + 1];
            goff[e + 1] = run;
        }
    }
    free(part);
    *biggest_out = biggest;
    return 0;
}

int64_t hk_fem_chunk_end(const int64_t *goff, int64_t ne, int64_t e0, size_t budget)
{
    int64_t lo = e0 + 1, hi = ne; /* the first e1 > e0 that is ne or leaves cell e1 out */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if ((size_t)(goff[mid + 1] - goff[e0]) * 8 + (size_t)(mid + 1 - e0) * 8 <= budget)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void hk_fem_chunk_offsets(const int64_t *goff, int64_t e0, int64_t e1, int64_t *rel)
{
#pragma omp parallel for schedule(static)
    for (int64_t e = e0; e < e1; e++)
        rel[e - e0] = goff[e] - goff[e0];
}
