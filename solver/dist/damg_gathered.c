/* pc=amg on several processes (dist_amg.c): the small levels on every process
 * (pc.amg.dist.gather_rows). From level g on, every process holds the whole level: the
 * operators, P and R of those levels are gathered once at the set-up (one allgatherv of every
 * process's packed rows), the P above level g is put back in the row order its gather needs,
 * and the cycle gathers level g's right-hand side (gather_vec) and runs the rest of the cycle
 * there without an exchange (damg_cycle.c). */
#include <stdlib.h>
#include <string.h>

#include "damg_impl.h"

/* ---- the small levels on every process (pc.amg.dist.gather_rows) ------------------------- */

/* Every process's entries of a level vector (own: this process's, in the backend's memory,
 * counts[q] bytes from process q) into the whole vector all, on this process's backend;
 * level >= 0: HOOKE_DIST_PROFILE counts it as that level's gather. */
int hk_damg_gather_vec(const hk_dist *d, const void *own, const size_t *counts, void *hown,
                       void *hall, void *all, int level)
{
    const hk_backend_ops *L = d->local;
    const int P = hk_comm_size(d->comm), me = hk_comm_rank(d->comm);
    size_t total = 0;
    for (int q = 0; q < P; q++)
        total += counts[q];
    double drain = 0;
    const double t0 = d->host_memory || level < 0 ? hk_dprof_now() : hk_dprof_drain(L, &drain);
    if (d->host_memory) { /* straight between the vectors */
        HK_CALL(hk_comm_allgatherv(d->comm, own, counts[me], all, counts));
        if (level >= 0) hk_dprof_exchange(HK_DPROF_G, level, 0, 0, hk_dprof_now() - t0);
        return 0;
    }
    if (counts[me]) HK_CALL(L->copy_from(hown, own, counts[me]));
    const double t1 = hk_dprof_now();
    HK_CALL(hk_comm_allgatherv(d->comm, hown, counts[me], hall, counts));
    const double t2 = hk_dprof_now();
    HK_CALL(L->copy_to(all, hall, total));
    if (level >= 0)
        hk_dprof_exchange(HK_DPROF_G, level, drain, t1 - t0 + hk_dprof_now() - t2, t2 - t1);
    return 0;
}

/* One operator to gather on every process (gather_operators): m's input level starts at
 * in_row0 on this process and has in_nglob block rows in all; the output level out_nglob. */
typedef struct gop {
    const dmat *m;
    int64_t in_row0, in_nglob, out_nglob;
    rmat *out;
} gop;

/* bytes rounded up to 8: each array of a packed operator starts aligned */
static size_t pad8(size_t bytes)
{
    return (bytes + 7) & ~(size_t)7;
}

/* Operator o packed with nr rows and nz blocks (any process's): its rows' lengths (int64),
 * global columns (int32) and values, each array from a multiple of 8 bytes. */
static size_t operator_bytes(const gop *o, int64_t nr, int64_t nz)
{
    const size_t e = o->m->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    const int64_t bb = (int64_t)o->m->br * o->m->bc;
    return pad8((size_t)nr * sizeof(int64_t)) + pad8((size_t)nz * sizeof(int32_t)) +
           pad8((size_t)(nz * bb) * e);
}

/* o's rows packed at dst (operator_bytes): lengths, the input level's global block ids, values. */
static int pack_operator(const hk_dist *d, const gop *o, char *dst)
{
    const hk_backend_ops *L = d->local;
    const dmat *m = o->m;
    const int64_t nr = m->nrows, nz = m->M.nnzb, bb = (int64_t)m->br * m->bc;
    const size_t e = m->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    int64_t *len = (int64_t *)dst, *rp = NULL;
    int32_t *col = (int32_t *)(dst + pad8((size_t)nr * sizeof *len)), *bcol = NULL;
    void *val = (char *)col + pad8((size_t)nz * sizeof *col);
    int ierr = 0;
    if (m->nint)
        return hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "pc=amg: a gathered level's operator has its rows split");
    if (o->in_nglob > INT32_MAX)
        return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "pc=amg: a level of %lld block rows is too large to gather on every "
                            "process; lower pc.amg.dist.gather_rows",
                            (long long)o->in_nglob);
    ierr = hk_malloc((size_t)(nr + 1) * sizeof *rp, &rp);
    if (!ierr) ierr = hk_malloc((size_t)(m->nbc + 1) * sizeof *bcol, &bcol);
    if (!ierr) ierr = L->copy_from(rp, m->M.rowptr, (size_t)(nr + 1) * sizeof *rp);
    if (!ierr && nz) ierr = L->copy_from(col, m->M.colind, (size_t)nz * sizeof *col);
    if (!ierr && m->nbc) ierr = L->copy_from(bcol, m->bcol_dev, (size_t)m->nbc * sizeof *bcol);
    if (!ierr && nz)
        ierr = L->copy_from(val, m->v32 ? (void *)m->v32 : (void *)m->M.val, (size_t)(nz * bb) * e);
    if (!ierr) {
        const int64_t row0 = o->in_row0, nbc = m->nbc;
        const int64_t *ghost = m->ghost;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nr; i++)
            len[i] = rp[i + 1] - rp[i];
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < nz; p++)
            col[p] = (int32_t)(col[p] < nbc ? row0 + bcol[col[p]] : ghost[col[p] - nbc]);
    }
    free(rp);
    free(bcol);
    return ierr;
}

/* The operators o[0..n) with the rows of every process, each one matrix on this process's
 * backend (rmat): every process packs its rows of all of them into one buffer, and one
 * allgatherv brings every process's buffer, so that the set-up makes two collectives for all
 * the gathered levels rather than several for each operator. The buffers go to the backend in
 * one upload (on the cpu they are read where they were received), and each operator's arrays
 * are copied there from its pieces: no host pass over the gathered blocks but the message's.
 * st, t: the profile's steps and their lap (pack, gather, operators). Collective. */
static int gather_operators(const hk_dist *d, const gop *o, int n, double *st, double *t)
{
    const hk_backend_ops *L = d->local;
    const hk_comm *c = d->comm;
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    int ierr = 0;
    int64_t *info = NULL, *grp = NULL; /* info: per process, per operator: rows, blocks */
    char *mine = NULL, *all = NULL, *dall = NULL; /* dall: all on the backend */
    size_t *counts = NULL, *start = NULL, *at = NULL, bytes = 0;
    for (int k = 0; k < n; k++)
        memset(o[k].out, 0, sizeof *o[k].out);
    ierr = hk_malloc((size_t)(2 * n * P + 1) * sizeof *info, &info);
    if (!ierr) ierr = hk_malloc((size_t)(P + 1) * sizeof *counts, &counts);
    if (!ierr) ierr = hk_calloc((size_t)(P + 1), sizeof *start, &start);
    if (!ierr) ierr = hk_malloc((size_t)(P + 1) * sizeof *at, &at);
    HK_TRY(hk_comm_agree(c, ierr));
    {
        int64_t *loc = info + (size_t)2 * n * me;
        for (int k = 0; k < n; k++) {
            loc[2 * k] = o[k].m->nrows;
            loc[2 * k + 1] = o[k].m->M.nnzb;
        }
        HK_TRY(hk_comm_allgather(c, loc, (size_t)2 * n * sizeof *info, info));
    }
    for (int q = 0; q < P; q++) {
        counts[q] = 0;
        for (int k = 0; k < n; k++)
            counts[q] += operator_bytes(&o[k], info[(size_t)2 * n * q + 2 * k],
                                        info[(size_t)2 * n * q + 2 * k + 1]);
        start[q + 1] = start[q] + counts[q];
    }
    bytes = start[P];
    ierr = hk_malloc(counts[me] + 8, &mine);
    if (!ierr) ierr = hk_malloc(bytes + 8, &all);
    for (size_t k = 0, off = 0; k < (size_t)n && !ierr; k++) {
        ierr = pack_operator(d, &o[k], mine + off);
        off += operator_bytes(&o[k], o[k].m->nrows, o[k].m->M.nnzb);
    }
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_step_lap(L, st, ST_CO_PACK, t);
    HK_TRY(hk_comm_allgatherv(c, mine, counts[me], all, counts));
    hk_damg_step_lap(L, st, ST_CO_GATHER, t);
    dall = all;
    if (!d->host_memory) ierr = hk_damg_upload(L, all, bytes, (void **)&dall);
    for (int q = 0; q < P; q++)
        at[q] = start[q]; /* process q's next operator in all */
    /* per operator: every process's rows in rank order */
    for (int k = 0; k < n && !ierr; k++) {
        const dmat *m = o[k].m;
        const int64_t bb = (int64_t)m->br * m->bc;
        const size_t e = m->prec == HK_FP64 ? sizeof(double) : sizeof(float);
        int64_t R = 0, Z = 0;
        for (int q = 0; q < P; q++) {
            R += info[(size_t)2 * n * q + 2 * k];
            Z += info[(size_t)2 * n * q + 2 * k + 1];
        }
        ierr = R == o[k].out_nglob ? 0
                                   : hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                                  "pc=amg: a gathered level has %lld rows, not "
                                                  "%lld",
                                                  (long long)R, (long long)o[k].out_nglob);
        rmat *out = o[k].out;
        void *val = NULL;
        if (!ierr) ierr = hk_malloc((size_t)(R + 1) * sizeof *grp, &grp);
        if (!ierr) ierr = hk_damg_pattern_alloc(L, m->br, m->bc, R, o[k].in_nglob, Z, &out->M);
        if (!ierr && d->host_memory) { /* written once below: not zeroed first */
            double *h = NULL;
            ierr = hk_damg_host_untouched((size_t)(Z * bb) * e + 8, &h);
            val = h;
        } else if (!ierr)
            ierr = L->alloc(&val, (size_t)(Z * bb) * e + 8);
        if (!ierr && m->v32)
            out->v32 = val;
        else if (!ierr)
            out->M.val = val;
        if (!ierr) grp[0] = 0;
        for (int64_t q = 0, r0 = 0, z0 = 0; q < P && !ierr; q++) {
            const int64_t nr = info[(size_t)2 * n * q + 2 * k],
                          nz = info[(size_t)2 * n * q + 2 * k + 1];
            const size_t col = at[q] + pad8((size_t)nr * sizeof *grp),
                         vals = col + pad8((size_t)nz * sizeof *out->M.colind);
            const int64_t *len = (const int64_t *)(all + at[q]);
            for (int64_t i = 0; i < nr; i++)
                grp[r0 + i + 1] = grp[r0 + i] + len[i];
            if (nz)
                ierr = hk_damg_copy_on(d, out->M.colind + z0, dall + col,
                                       (size_t)nz * sizeof(int32_t));
            if (!ierr && nz)
                ierr = hk_damg_copy_on(d, (char *)val + (size_t)(z0 * bb) * e, dall + vals,
                                       (size_t)(nz * bb) * e);
            at[q] += operator_bytes(&o[k], nr, nz);
            r0 += nr;
            z0 += nz;
        }
        if (!ierr) ierr = L->copy_to(out->M.rowptr, grp, (size_t)(R + 1) * sizeof *grp);
        free(grp);
        grp = NULL;
    }
    if (dall != all) { /* the copies have read it before it is freed */
        const int e2 = L->sync();
        if (!ierr) ierr = e2;
    }
    ierr = hk_comm_agree(c, ierr);
fail:
    if (dall && dall != all) L->dealloc(dall);
    free(info);
    free(counts);
    free(start);
    free(at);
    free(mine);
    free(all);
    free(grp);
    if (!ierr) hk_damg_step_lap(L, st, ST_CO_OPERATORS, t); /* with the frees (pages returned) */
    return ierr;
}

/* The smoothers' diagonals (Dinv, and l1 where there is one) of the gathered levels above
 * the coarsest (g .. nlevels - 2), each whole on every process, and the bytes of level g's
 * vector on each process (gcount, for the cycle's gather): one allgather of every process's
 * rows of the levels from g, then one allgatherv of all these diagonals, each process's
 * packed in one buffer. Collective. */
static int gather_vectors(hk_pc *pc, damg *a, int g, size_t **gcount)
{
    const hk_dist *d = a->d;
    const hk_comm *c = d->comm;
    const hk_backend_ops *Lb = d->local;
    const int P = hk_comm_size(c), me = hk_comm_rank(c), nl = a->nlevels - g;
    const size_t e = pc->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    int ierr = 0;
    int64_t *rows = NULL; /* per process, per level from g: its block rows; then this one's */
    size_t *counts = NULL, *start = NULL, *cur = NULL;
    char *mine = NULL, *all = NULL;
    *gcount = NULL;
    ierr = hk_malloc((size_t)(P + 1) * nl * sizeof *rows, &rows);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *counts, &counts);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *start, &start);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *cur, &cur);
    if (!ierr) ierr = hk_malloc((size_t)P * sizeof **gcount, gcount);
    HK_TRY(hk_comm_agree(c, ierr));
    int64_t *loc = rows + (size_t)P * nl;
    for (int k = 0; k < nl; k++)
        loc[k] = a->lev[g + k].nown;
    HK_TRY(hk_comm_allgather(c, loc, (size_t)nl * sizeof *rows, rows));
    for (int q = 0; q < P; q++)
        (*gcount)[q] = (size_t)(rows[(size_t)nl * q] * a->lev[g].bs) * e;
    /* the levels' vectors in the order packed: Dinv of bs x bs a row, l1 of bs */
    for (int k = 0; k < nl - 1; k++) {
        const dlev *L = &a->lev[g + k];
        const int64_t unit = (int64_t)L->bs * L->bs + (L->l1 ? L->bs : 0);
        int64_t sum = 0;
        for (int q = 0; q < P; q++) {
            sum += rows[(size_t)nl * q + k];
            counts[q] += (size_t)(rows[(size_t)nl * q + k] * unit) * e;
        }
        if (!ierr && (sum != L->nglob || L->Dinv->n != L->nown * L->bs * L->bs ||
                      (L->l1 && L->l1->n != L->nown * L->bs)))
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "pc=amg: level %d's diagonals to gather have %lld rows in all, "
                                "not %lld",
                                g + k, (long long)sum, (long long)L->nglob);
    }
    for (int q = 0; q < P; q++)
        start[q + 1] = start[q] + counts[q];
    if (!ierr) ierr = hk_malloc(counts[me] + 8, &mine);
    if (!ierr) ierr = hk_malloc(start[P] + 8, &all);
    size_t at = 0;
    for (int k = 0; k < nl - 1 && !ierr; k++) {
        const dlev *L = &a->lev[g + k];
        const hk_vec *own[2] = {L->Dinv, L->l1};
        for (int v = 0; v < 2 && !ierr; v++)
            if (own[v] && own[v]->n) {
                ierr = Lb->copy_from(mine + at, own[v]->data, (size_t)own[v]->n * e);
                at += (size_t)own[v]->n * e;
            }
    }
    HK_TRY(hk_comm_agree(c, ierr));
    if (start[P]) HK_TRY(hk_comm_allgatherv(c, mine, counts[me], all, counts));
    for (int q = 0; q < P; q++)
        cur[q] = start[q];
    for (int k = 0; k < nl - 1 && !ierr; k++) {
        dlev *L = &a->lev[g + k];
        const int64_t per[2] = {(int64_t)L->bs * L->bs, L->bs};
        hk_vec **whole[2] = {&L->gDinv, &L->gl1};
        for (int v = 0; v < 2 && !ierr; v++) {
            if (v == 1 && !L->l1) continue;
            ierr = hk_damg_vec_sized(Lb, L->nglob * per[v], pc->prec, whole[v]);
            char *to = ierr ? NULL : (char *)(*whole[v])->data;
            for (int q = 0; q < P && !ierr; q++) {
                const size_t bytes = (size_t)(rows[(size_t)nl * q + k] * per[v]) * e;
                if (bytes) ierr = Lb->copy_to(to, all + cur[q], bytes);
                to += bytes;
                cur[q] += bytes;
            }
        }
    }
    HK_TRY(hk_comm_agree(c, ierr));
fail:
    free(rows);
    free(counts);
    free(start);
    free(cur);
    free(mine);
    free(all);
    if (ierr) {
        free(*gcount);
        *gcount = NULL;
    }
    return ierr;
}

/* The block ids in level l + 1's whole vector of P_l's input columns [owned read, ghosts]. */
static int pfull_index(const hk_dist *d, const dmat *m, int64_t in_row0, int32_t **dev)
{
    const hk_backend_ops *L = d->local;
    const int64_t n = m->nbc + m->ng;
    int32_t *idx = NULL;
    int ierr = hk_malloc((size_t)(n + 1) * sizeof *idx, &idx);
    if (!ierr && m->nbc) ierr = L->copy_from(idx, m->bcol_dev, (size_t)m->nbc * sizeof *idx);
    if (!ierr) {
        for (int64_t j = 0; j < m->nbc; j++)
            idx[j] = (int32_t)(in_row0 + idx[j]);
        for (int64_t k = 0; k < m->ng; k++)
            idx[m->nbc + k] = (int32_t)m->ghost[k];
    }
    if (!ierr) ierr = L->alloc((void **)dev, (size_t)(n + 1) * sizeof *idx);
    if (!ierr && n) ierr = L->copy_to(*dev, idx, (size_t)n * sizeof *idx);
    free(idx);
    return ierr;
}

/* M's rows back in their order where hk_damg_dmat_create split them (interior rows first) and the
 * matrix must not be: P of the level above the first gathered one when that level turned out
 * to be the coarsest only at its aggregation (its product reads the whole correction, with
 * no exchange to overlap). Local (no message). */
static int dmat_unsplit(const hk_dist *d, dmat *m)
{
    const hk_backend_ops *L = d->local;
    const int64_t nr = m->nrows, nz = m->M.nnzb, bb = (int64_t)m->br * m->bc;
    int ierr = 0;
    int64_t *rp = NULL, *nrp = NULL;
    int32_t *col = NULL, *ncol = NULL, *src = NULL, *pos = NULL, *src_dev = NULL;
    void *nval = NULL;
    if (!m->nint) return 0;
    HK_TRY(hk_malloc((size_t)(nr + 1) * sizeof *rp, &rp));
    HK_TRY(hk_malloc((size_t)(nr + 1) * sizeof *nrp, &nrp));
    HK_TRY(hk_malloc((size_t)(nr + 1) * sizeof *pos, &pos));
    HK_TRY(hk_malloc((size_t)(nz + 1) * sizeof *col, &col));
    HK_TRY(hk_malloc((size_t)(nz + 1) * sizeof *ncol, &ncol));
    HK_TRY(hk_malloc((size_t)(nz + 1) * sizeof *src, &src));
    HK_TRY(L->copy_from(rp, m->M.rowptr, (size_t)(nr + 1) * sizeof *rp));
    HK_TRY(L->copy_from(pos, m->ypos_dev, (size_t)nr * sizeof *pos));
    if (nz) HK_TRY(L->copy_from(col, m->M.colind, (size_t)nz * sizeof *col));
    nrp[0] = 0;
    for (int64_t i = 0, q = 0; i < nr; i++) { /* row i is stored at pos[i] */
        for (int64_t p = rp[pos[i]]; p < rp[pos[i] + 1]; p++, q++) {
            ncol[q] = col[p];
            src[q] = (int32_t)p;
        }
        nrp[i + 1] = q;
    }
    const size_t e = m->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    HK_TRY(L->alloc(&nval, (size_t)(nz * bb) * e + 8));
    if (!d->host_memory)
        HK_TRY(hk_damg_upload(L, src, (size_t)nz * sizeof *src, (void **)&src_dev));
    {
        const hk_vec from = {.be = L,
                             .n = nz * bb,
                             .prec = m->prec,
                             .data = m->v32 ? (void *)m->v32 : (void *)m->M.val};
        hk_vec to = {.be = L, .n = nz * bb, .prec = m->prec, .data = nval};
        HK_TRY(L->vec_gather(&to, &from, d->host_memory ? src : src_dev, nz, (int)bb));
    }
    HK_TRY(L->copy_to(m->M.rowptr, nrp, (size_t)(nr + 1) * sizeof *nrp));
    if (nz) HK_TRY(L->copy_to(m->M.colind, ncol, (size_t)nz * sizeof *ncol));
    HK_TRY(L->sync()); /* the old values are read before they are freed */
    if (m->v32) {
        L->dealloc(m->v32);
        m->v32 = nval;
    } else {
        L->dealloc(m->M.val);
        m->M.val = nval;
    }
    nval = NULL;
    L->dealloc(m->ypos_dev);
    m->ypos_dev = NULL;
    hk_vec_destroy(m->ytmp);
    m->ytmp = NULL;
    m->nint = m->nzint = 0;
fail:
    if (nval) L->dealloc(nval);
    if (src_dev) L->dealloc(src_dev);
    free(rp);
    free(nrp);
    free(pos);
    free(col);
    free(ncol);
    free(src);
    return ierr;
}

/* After the set-up: the profile's labels, and the levels from the first one of at most
 * pc.amg.dist.gather_rows scalar rows in all (at least level 1; the coarsest at the latest)
 * gathered on every process, so that the cycle below it makes no exchange: level g's
 * right-hand side is gathered once going down, and P_{g-1} reads the whole correction.
 * Collective. */
int hk_damg_gather_levels(hk_pc *pc, damg *a)
{
    const hk_dist *d = a->d;
    const hk_comm *c = d->comm;
    const hk_backend_ops *Lb = d->local;
    const int n = a->nlevels;
    const size_t e = pc->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    int ierr = 0;
    for (int l = 0; l < n; l++) {
        dlev *L = &a->lev[l];
        dmat *m[3] = {L->A, L->P, L->R};
        const int kind[3] = {HK_DPROF_A, HK_DPROF_P, HK_DPROF_R};
        for (int k = 0; k < 3; k++)
            if (m[k]) m[k]->prof_kind = kind[k], m[k]->prof_level = l;
    }
    a->g = n;
    if (a->gather_rows > 0 && n >= 2) {
        a->g = n - 1;
        for (int l = 1; l < n - 1; l++)
            if (a->rows[l] <= a->gather_rows) {
                a->g = l;
                break;
            }
    }
    const int g = a->g;
    /* the operators that keep their exchanges were split at their creation (split_below);
     * P_{g-1} reads the whole correction of level g: no exchange to overlap */
    double t[2];
    hk_damg_lap_start(t);
    if (g < n) HK_CALL(hk_comm_agree(c, dmat_unsplit(d, a->lev[g - 1].P)));
    hk_damg_step_lap(Lb, a->st, ST_CO_UNSPLIT, t);
    if (g >= n) return 0;
    if (g < n - 1) { /* the operators of the gathered levels above the coarsest */
        gop *o = NULL;
        const int nop = 3 * (n - 1 - g);
        HK_CALL(hk_comm_agree(c, hk_malloc((size_t)nop * sizeof *o, &o)));
        for (int l = g; l < n - 1; l++) {
            dlev *L = &a->lev[l], *C = &a->lev[l + 1];
            gop *ol = o + 3 * (l - g);
            ol[0] = (gop){L->A, L->row0, L->nglob, L->nglob, &L->gA};
            ol[1] = (gop){L->P, C->row0, C->nglob, L->nglob, &L->gP};
            ol[2] = (gop){L->R, L->row0, L->nglob, C->nglob, &L->gR};
        }
        ierr = gather_operators(d, o, nop, a->st, t);
        free(o);
        if (ierr) return ierr;
    }
    HK_CALL(gather_vectors(pc, a, g, &a->gcount));
    for (int l = g; l < n - 1; l++) {
        dlev *L = &a->lev[l];
        const int64_t ne = L->nglob * L->bs;
        hk_vec **v[] = {&L->gb, &L->gx, &L->gr, &L->gt, &L->gd, &L->gw, &L->ge};
        for (size_t i = 0; i < sizeof v / sizeof v[0] && !ierr; i++)
            ierr = hk_damg_vec_sized(Lb, ne, pc->prec, v[i]);
    }
    /* the way down and up between level g - 1 and g */
    dlev *F = &a->lev[g - 1], *G = &a->lev[g];
    if (!ierr) ierr = pfull_index(d, F->P, G->row0, &F->pfull_dev);
    if (!ierr && !d->host_memory) ierr = hk_malloc(a->gcount[hk_comm_rank(c)] + 8, &a->gown);
    if (!ierr && !d->host_memory) ierr = hk_malloc((size_t)(G->nglob * G->bs) * e + 8, &a->gall);
    HK_CALL(hk_comm_agree(c, ierr));
    /* the distributed operators below g are not used any more */
    for (int l = g; l < n; l++) {
        dlev *L = &a->lev[l];
        hk_damg_dmat_destroy(L->A);
        hk_damg_dmat_destroy(L->P);
        hk_damg_dmat_destroy(L->R);
        L->A = L->P = L->R = NULL;
    }
    hk_damg_step_lap(Lb, a->st, ST_CO_VECTORS, t);
    return 0;
}
