/* VTK XML output, written directly: .vtu (UnstructuredGrid) and .pvd.
 *
 * The XML head is plain text; the arrays follow it in one <AppendedData encoding="raw">
 * section (header_type UInt64; a DataArray's offset counts bytes from the byte after '_'):
 *   uncompressed: the UInt64 byte count, then the values;
 *   compressed:   UInt64 [number of blocks, block size, size of the last block when partial
 *                 (else 0), compressed size of each block], then the blocks, each compressed
 *                 on its own (zlib's compress2 or LZ4's block format), as vtkXMLDataParser
 *                 reads them with vtkZLibDataCompressor or vtkLZ4DataCompressor.
 * The data go out with pwrite at positions fixed by the block order: every thread converts or
 * compresses, and at most HOOKE_OUTPUT_WRITERS of them call pwrite at once (a counting
 * semaphore: buffered writes to one file serialise on its inode lock, and many writers
 * waiting there burn system time); blocks are placed by the running sum of their sizes in
 * block order, so the bytes depend neither on the thread count nor on the writer count.
 * (Copying into an mmap of the file was slower than pwrite and was removed: docs/output.md.)
 * Compressed sizes are known only after compression, so a compressed file's head is written
 * last, over room reserved for it: each offset is followed by blanks up to 20 digits' width
 * (blanks before "/>", which XML allows). ASCII mode writes the values inline
 * (format="ascii") through stdio. */
#define _GNU_SOURCE /* open_memstream, pwrite */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#ifdef HOOKE_HAVE_LZ4
#include <lz4.h>
#endif

#include <omp.h>

#include "threads.h"
#include "marked.h"
#include "pp_impl.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define VTU_BLOCK ((size_t)1 << 16) /* uncompressed bytes per compressed block */
#define VTU_PIECE ((size_t)1 << 20) /* bytes per pwrite of an uncompressed array */
#define VTU_OFFSET_WIDTH 20         /* digits of the largest UInt64: room for any offset */
#define VTU_WRITERS 4               /* default of HOOKE_OUTPUT_WRITERS: threads in pwrite at once */

int hk_vtu_have_lz4(void)
{
#ifdef HOOKE_HAVE_LZ4
    return 1;
#else
    return 0;
#endif
}

/* One array of the file. */
typedef struct {
    const char *name;
    const char *type; /* VTK type name of the values in the file */
    int ncomp;
    int64_t ntuples;
    int word;                      /* bytes per value in the file */
    const void *data;              /* the values in memory: ntuples * ncomp, or by take */
    const int64_t *take;           /* NULL, or tuple t of the file is tuple take[t] of data */
    int from_double;               /* data are doubles, written as Float32 */
    const char *const *comp_names; /* NULL or ncomp names */
    uint64_t offset;               /* appended: from the byte after '_' */
    uint64_t size;                 /* appended: bytes (header and values or blocks) */
} vtu_array;

static uint64_t array_bytes(const vtu_array *a)
{
    return (uint64_t)a->ntuples * (uint64_t)a->ncomp * (uint64_t)a->word;
}

/* The array needs a buffer to give its bytes (values_at): Float32 conversion or gathering. */
static int needs_tmp(const vtu_array *a)
{
    return a->from_double || a->take;
}

/* Bytes [start, start + len) of a's values as written: its memory itself, or, converted to
 * Float32 or gathered by a->take, a copy in tmp (room for len bytes). start and len are
 * multiples of the file's word. Gathering copies runs of consecutive tuples at once. */
static const unsigned char *values_at(const vtu_array *a, uint64_t start, size_t len, void *tmp)
{
    if (!needs_tmp(a)) return (const unsigned char *)a->data + start;
    const size_t sw = a->from_double ? sizeof(double) : (size_t)a->word; /* bytes in memory */
    const int64_t nc = a->ncomp;
    int64_t v = (int64_t)(start / (uint64_t)a->word);
    const int64_t vend = v + (int64_t)(len / (size_t)a->word);
    unsigned char *out = tmp;
    while (v < vend) {
        /* values from v on that lie one after the other in memory */
        const int64_t t = v / nc, first = a->take ? a->take[t] : t;
        int64_t n = MIN(nc - v % nc, vend - v), k = 1;
        while (a->take && v + n < vend && a->take[t + k] == first + k)
            n = MIN(n + nc, vend - v), k++;
        if (!a->take) n = vend - v;
        const unsigned char *src =
            (const unsigned char *)a->data + (size_t)(first * nc + v % nc) * sw;
        if (a->from_double) {
            const double *d = (const double *)src;
            float *f = (float *)out;
            for (int64_t i = 0; i < n; i++)
                f[i] = (float)d[i];
        } else {
            memcpy(out, src, (size_t)n * sw);
        }
        out += (size_t)n * (size_t)a->word, v += n;
    }
    return tmp;
}

/* All of buf at pos; 0, or an errno. */
static int pwrite_all(int fd, const void *buf, size_t len, uint64_t pos)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = pwrite(fd, p, len, (off_t)pos);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w, len -= (size_t)w, pos += (uint64_t)w;
    }
    return 0;
}

static size_t compress_bound(hk_vtu_compression c)
{
#ifdef HOOKE_HAVE_LZ4
    if (c == HK_VTU_LZ4) return (size_t)LZ4_compressBound((int)VTU_BLOCK);
#endif
    (void)c;
    return (size_t)compressBound((uLong)VTU_BLOCK);
}

/* A thread's compressor: one zlib stream reset for every block (compress2 would set up and
 * free its state each time). */
typedef struct {
    hk_vtu_compression c;
    z_stream zs;
    int zs_ready;
} block_zip;

/* Level 1 compresses floating-point arrays with zlib's run-length strategy: matches longer
 * than a byte are rare in such data, and the default search took 2-3x the time for 1-4%
 * smaller blocks on recovered fields (docs/output.md); integer arrays (connectivity, types,
 * regions) keep the default search, which halves their size. */
static int zip_init(block_zip *z, hk_vtu_compression c, int level, int floating)
{
    memset(z, 0, sizeof *z);
    z->c = c;
    if (c != HK_VTU_ZLIB) return 0;
    const int strategy = level == 1 && floating ? Z_RLE : Z_DEFAULT_STRATEGY;
    if (deflateInit2(&z->zs, level, Z_DEFLATED, 15, 8, strategy) != Z_OK) return -1;
    z->zs_ready = 1;
    return 0;
}

static void zip_free(block_zip *z)
{
    if (z->zs_ready) deflateEnd(&z->zs);
    z->zs_ready = 0;
}

/* Compress one block into dst (room compress_bound); its compressed size, 0 on failure. */
static size_t zip_block(block_zip *z, const unsigned char *src, size_t len, unsigned char *dst,
                        size_t cap)
{
#ifdef HOOKE_HAVE_LZ4
    if (z->c == HK_VTU_LZ4) {
        int n = LZ4_compress_default((const char *)src, (char *)dst, (int)len, (int)cap);
        return n > 0 ? (size_t)n : 0;
    }
#endif
    if (!z->zs_ready || deflateReset(&z->zs) != Z_OK) return 0;
    z->zs.next_in = (Bytef *)src, z->zs.avail_in = (uInt)len;
    z->zs.next_out = dst, z->zs.avail_out = (uInt)cap;
    return deflate(&z->zs, Z_FINISH) == Z_STREAM_END ? (size_t)z->zs.total_out : 0;
}

/* The shared state of one file's parallel writing; errors are kept, first one wins. */
typedef struct {
    int fd;
    uint64_t base; /* file position of the byte after '_' */
    int err_errno; /* a write failed with this errno */
    int err_zip;   /* a block did not compress */
    int limited;   /* slots holds the writer count: at most that many threads in pwrite */
    sem_t slots;
} vtu_out;

/* HOOKE_OUTPUT_WRITERS into *writers: threads in pwrite at once (0: every thread), read at
 * every write (docs/output.md). */
static int output_writers(const char *path, int *writers)
{
    const char *w = getenv("HOOKE_OUTPUT_WRITERS");
    *writers = VTU_WRITERS;
    if (w && *w && strcmp(w, "all")) {
        char *end;
        const long v = strtol(w, &end, 10);
        HK_CHECK(*end == '\0' && v >= 1 && v <= 65536, HK_ERR_ARG,
                 "could not write '%s': HOOKE_OUTPUT_WRITERS=%s is not a thread count; set it to "
                 "a whole number from 1 or to 'all', or unset it",
                 path, w);
        *writers = (int)v;
    } else if (w && *w) {
        *writers = 0;
    }
    return 0;
}

/* o ready to write into fd, at most writers threads in pwrite at once (0: no limit). */
static void out_begin(vtu_out *o, int fd, uint64_t base, int writers)
{
    memset(o, 0, sizeof *o);
    o->fd = fd, o->base = base;
    if (writers > 0 && writers < omp_get_max_threads())
        o->limited = sem_init(&o->slots, 0, (unsigned)writers) == 0;
}

/* Drops the writer limit. */
static void out_end(vtu_out *o)
{
    if (o->limited) sem_destroy(&o->slots);
    o->limited = 0;
}

/* All of buf at pos, written with pwrite once a writer's slot is free. 0, or an errno. */
static int out_write(vtu_out *o, const void *buf, size_t len, uint64_t pos)
{
    int held = 0; /* a slot taken (a wait that fails otherwise than by a signal writes anyway) */
    if (o->limited) {
        int r;
        while ((r = sem_wait(&o->slots)) != 0 && errno == EINTR)
            ;
        held = r == 0;
    }
    const int err = pwrite_all(o->fd, buf, len, pos);
    if (held) sem_post(&o->slots); /* only a slot taken goes back: the limit stays the limit */
    return err;
}

static void note_error(vtu_out *o, int err, int zip)
{
#pragma omp critical(hk_vtu_error)
    {
        if (err && !o->err_errno) o->err_errno = err;
        if (zip) o->err_zip = 1;
    }
}

/* An uncompressed array at o->base + a->offset: its byte count, then its values in pieces
 * written by every thread (positions known beforehand), or by this one alone. */
static void write_plain(vtu_out *o, vtu_array *a, int parallel)
{
    const uint64_t nbytes = array_bytes(a), at = o->base + a->offset;
    const int64_t npieces = (int64_t)((nbytes + VTU_PIECE - 1) / VTU_PIECE);
    int err = out_write(o, &nbytes, sizeof nbytes, at);
    if (err) note_error(o, err, 0);
    a->size = sizeof nbytes + nbytes;
#pragma omp parallel if (parallel && npieces > 1)
    {
        void *tmp = needs_tmp(a) ? malloc(VTU_PIECE) : NULL;
        if (needs_tmp(a) && !tmp) note_error(o, ENOMEM, 0);
#pragma omp for schedule(dynamic, 1)
        for (int64_t p = 0; p < npieces; p++) {
            if (needs_tmp(a) && !tmp) continue;
            const uint64_t start = (uint64_t)p * VTU_PIECE;
            const size_t len = (size_t)(nbytes - start < VTU_PIECE ? nbytes - start : VTU_PIECE);
            int e = out_write(o, values_at(a, start, len, tmp), len, at + 8 + start);
            if (e) note_error(o, e, 0);
        }
        free(tmp);
    }
}

/* A compressed array at o->base + a->offset: the header with the blocks' sizes, then the
 * blocks, each right after the previous one in block order. Blocks go in batches of a few per
 * thread through two buffers: while the threads compress batch k into one, they write batch
 * k - 1 from the other at the positions the running sum of its sizes gave (two barriers a
 * batch, whatever the number of blocks). */
static void write_compressed(vtu_out *o, vtu_array *a, hk_vtu_compression c, int level)
{
    const uint64_t nbytes = array_bytes(a), nblocks = (nbytes + VTU_BLOCK - 1) / VTU_BLOCK;
    const uint64_t hbytes = (3 + nblocks) * sizeof(uint64_t), at = o->base + a->offset;
    const size_t cap = compress_bound(c);
    /* blocks per batch: 16 MiB of values, and at least 8 a thread (the two buffers hold two
     * batches; a batch costs two barriers, which an oversubscribed machine makes slow) */
    const int64_t batch = MAX(8 * (int64_t)omp_get_max_threads(), 256);
    const int64_t nbatches = ((int64_t)nblocks + batch - 1) / batch;
    uint64_t *hdr = malloc(hbytes), *pos = malloc(2 * (size_t)batch * sizeof(uint64_t));
    unsigned char *slots = malloc(2 * (size_t)batch * cap);
    if (!hdr || !pos || !slots) {
        note_error(o, ENOMEM, 0);
        goto done;
    }
    hdr[0] = nblocks, hdr[1] = VTU_BLOCK, hdr[2] = nbytes % VTU_BLOCK;
    uint64_t next = at + hbytes; /* where the next block goes */
#pragma omp parallel if (nblocks > 1)
    {
        void *tmp = needs_tmp(a) ? malloc(VTU_BLOCK) : NULL;
        block_zip zip;
        const int floating = !strncmp(a->type, "Float", 5);
        const int ok = (tmp || !needs_tmp(a)) && zip_init(&zip, c, level, floating) == 0;
        if (!ok) note_error(o, ENOMEM, 0);
        for (int64_t k = 0; k <= nbatches; k++) {
            /* compress batch k into buffer k % 2, write batch k - 1 from the other */
            const int64_t c0 = k * batch,
                          c1 = k < nbatches ? MIN(c0 + batch, (int64_t)nblocks) : c0;
            const int64_t w0 = (k - 1) * batch, w1 = k > 0 ? MIN(k * batch, (int64_t)nblocks) : w0;
            unsigned char *cbuf = slots + (size_t)(k % 2) * (size_t)batch * cap;
            const unsigned char *wbuf = slots + (size_t)((k + 1) % 2) * (size_t)batch * cap;
            uint64_t *cpos = pos + (k % 2) * batch;
            const uint64_t *wpos = pos + ((k + 1) % 2) * batch;
#pragma omp for schedule(dynamic, 1)
            for (int64_t j = 0; j < (w1 - w0) + (c1 - c0); j++) {
                if (j < w1 - w0) {
                    const int64_t b = w0 + j;
                    if (!hdr[3 + b]) continue;
                    int e = out_write(o, wbuf + (size_t)j * cap, hdr[3 + b], wpos[j]);
                    if (e) note_error(o, e, 0);
                    continue;
                }
                const int64_t b = c0 + j - (w1 - w0);
                const uint64_t start = (uint64_t)b * VTU_BLOCK;
                const size_t len = (size_t)MIN(nbytes - start, (uint64_t)VTU_BLOCK);
                unsigned char *z = cbuf + (size_t)(b - c0) * cap;
                hdr[3 + b] = ok ? zip_block(&zip, values_at(a, start, len, tmp), len, z, cap) : 0;
                if (ok && !hdr[3 + b]) note_error(o, 0, 1);
            }
#pragma omp single
            for (int64_t b = c0; b < c1; b++)
                cpos[b - c0] = next, next += hdr[3 + b];
        }
        if (ok) zip_free(&zip);
        free(tmp);
    }
    int err = out_write(o, hdr, hbytes, at);
    if (err) note_error(o, err, 0);
    a->size = next - at;
done:
    free(hdr);
    free(pos);
    free(slots);
}

/* The values of a as text, a tuple per line. */
static void put_ascii(FILE *fp, const vtu_array *a)
{
    const int64_t n = a->ntuples * a->ncomp;
    for (int64_t j = 0; j < n; j++) {
        const char sep = (j + 1) % a->ncomp ? ' ' : '\n';
        const int64_t i = a->take ? a->take[j / a->ncomp] * a->ncomp + j % a->ncomp : j;
        if (a->from_double)
            fprintf(fp, "%.9g%c", (double)(float)((const double *)a->data)[i], sep);
        else if (!strcmp(a->type, "Float64"))
            fprintf(fp, "%.17g%c", ((const double *)a->data)[i], sep);
        else if (!strcmp(a->type, "Int64"))
            fprintf(fp, "%" PRId64 "%c", ((const int64_t *)a->data)[i], sep);
        else if (!strcmp(a->type, "Int32"))
            fprintf(fp, "%" PRId32 "%c", ((const int32_t *)a->data)[i], sep);
        else
            fprintf(fp, "%u%c", (unsigned)((const uint8_t *)a->data)[i], sep);
    }
}

/* <DataArray .../> (appended: with its offset, padded to a fixed width when pad is set) or
 * <DataArray ...>values</DataArray> (ascii). */
static void put_array(FILE *fp, const vtu_array *a, int ascii, int pad)
{
    fprintf(fp, "        <DataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\"", a->type,
            a->name, a->ncomp);
    if (a->comp_names)
        for (int c = 0; c < a->ncomp; c++)
            fprintf(fp, " ComponentName%d=\"%s\"", c, a->comp_names[c]);
    if (ascii) {
        fputs(" format=\"ascii\">\n", fp);
        put_ascii(fp, a);
        fputs("        </DataArray>\n", fp);
        return;
    }
    int digits = fprintf(fp, " format=\"appended\" offset=\"%" PRIu64 "\"", a->offset) -
                 (int)strlen(" format=\"appended\" offset=\"\"");
    fprintf(fp, "%*s/>\n", pad ? VTU_OFFSET_WIDTH - digits : 0, "");
}

static const char *const tensor_names[6] = {"xx", "yy", "zz", "xy", "yz", "xz"};
/* axisymmetric: x = r, y = z, and the hoop direction theta (t) in the place of z */
static const char *const axi_names[6] = {"rr", "zz", "tt", "rz", "zt", "rt"};

/* The arrays of a file and what they are written with. */
typedef struct {
    vtu_array arr[16];
    int narr, npoint_first, ncell_first;
    int has_region; /* arr[ncell_first] is the mesh's region array */
    int64_t nn, ne;
    int has_vm, has_cell_vm;
    const char *vectors;    /* the PointData's Vectors attribute, NULL: none */
    const hk_fields *fdata; /* its FieldData (nfield_data scalars), NULL: none */
    const char *compressor; /* NULL: uncompressed */
    int ascii;
} vtu_plan;

/* The document up to the '_' that opens the appended data (binary), or whole (ascii). */
static void put_head(FILE *fp, const vtu_plan *pl, int pad)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", fp);
    fputs("<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" "
          "header_type=\"UInt64\"",
          fp);
    if (pl->compressor) fprintf(fp, " compressor=\"%s\"", pl->compressor);
    fputs(">\n  <UnstructuredGrid>\n", fp);
    if (pl->fdata) { /* scalars of the whole grid (a mode's frequency), inline */
        fputs("    <FieldData>\n", fp);
        for (int k = 0; k < pl->fdata->nfield_data && k < 4; k++) {
            fputs("      <DataArray type=\"Float64\" Name=\"", fp);
            hk_pp_put_escaped(fp, pl->fdata->field_data_name[k]);
            fprintf(fp, "\" NumberOfTuples=\"1\" format=\"ascii\">%.17g</DataArray>\n",
                    pl->fdata->field_data[k]);
        }
        fputs("    </FieldData>\n", fp);
    }
    fprintf(fp, "    <Piece NumberOfPoints=\"%lld\" NumberOfCells=\"%lld\">\n", (long long)pl->nn,
            (long long)pl->ne);
    fputs("      <PointData", fp);
    if (pl->has_vm) fputs(" Scalars=\"von_mises\"", fp);
    if (pl->vectors) fprintf(fp, " Vectors=\"%s\"", pl->vectors);
    fputs(">\n", fp);
    for (int k = pl->npoint_first; k < pl->ncell_first; k++)
        put_array(fp, &pl->arr[k], pl->ascii, pad);
    fputs("      </PointData>\n      <CellData", fp);
    if (pl->has_cell_vm) fputs(" Scalars=\"element_von_mises\"", fp);
    fputs(">\n", fp);
    for (int k = pl->ncell_first; k < pl->narr; k++)
        put_array(fp, &pl->arr[k], pl->ascii, pad);
    fputs("      </CellData>\n      <Points>\n", fp);
    put_array(fp, &pl->arr[0], pl->ascii, pad);
    fputs("      </Points>\n      <Cells>\n", fp);
    for (int k = 1; k < 4; k++)
        put_array(fp, &pl->arr[k], pl->ascii, pad);
    fputs("      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n", fp);
    if (pl->ascii)
        fputs("</VTKFile>\n", fp);
    else
        fputs("  <AppendedData encoding=\"raw\">\n   _", fp);
}

static const char vtu_tail[] = "\n  </AppendedData>\n</VTKFile>\n";

/* The head as text in memory (*text, *len). */
static int head_text(const vtu_plan *pl, int pad, char **text, size_t *len)
{
    *text = NULL;
    FILE *fp = open_memstream(text, len);
    HK_CHECK(fp, HK_ERR_MEMORY, "hk_vtu_write: out of memory for the XML head");
    put_head(fp, pl, pad);
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(*text);
        *text = NULL;
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "hk_vtu_write: out of memory for the XML head");
    }
    return 0;
}

/* The cells in VTK's order (vtk_cells). */
typedef struct {
    int32_t *conn;
    void *offs;
    uint8_t *types;
    int64_t nconn;
    int offs64;
} vtu_cells;

static void cells_free(vtu_cells *c)
{
    free(c->conn);
    free(c->offs);
    free(c->types);
    c->conn = NULL, c->offs = NULL, c->types = NULL;
}

/* What of the mesh a file holds: all of it, or the kept cells and the nodes they use, in the
 * mesh's order (hk_vtu_write_cells). */
typedef struct {
    int64_t nn, ne; /* the file's nodes and cells */
    int64_t *nodes; /* NULL: the mesh's first nn nodes; else the file's node j is nodes[j] */
    int64_t *cells; /* NULL: the mesh's first ne cells; else the file's cell j is cells[j] */
    int32_t *index; /* with nodes: each mesh node's index in the file, -1 where not in it */
} vtu_piece;

static void piece_free(vtu_piece *pc)
{
    free(pc->nodes);
    free(pc->cells);
    free(pc->index);
    pc->nodes = NULL, pc->cells = NULL, pc->index = NULL;
}

/* The i < n with flag[i] set, increasing, into *list (*count of them; NULL when none), and with
 * index each i's place in it (-1 where not set); on every thread. */
static int kept_list(int64_t n, const uint8_t *flag, int64_t **list, int64_t *count, int32_t *index)
{
    *list = NULL, *count = 0;
    if (n <= 0) return 0;
    HK_CALL(hk_malloc((size_t)n * sizeof **list, list));
    *count = hk_list_marked(flag, n, index, *list);
    if (*count == 0) {
        free(*list), *list = NULL;
    } else if (*count < n) { /* give back the room of the unkept; keep the list if it fails */
        int64_t *fit = realloc(*list, (size_t)*count * sizeof **list);
        if (fit) *list = fit;
    }
    return 0;
}

/* The piece of m of the cells with keep[e] set (keep NULL: the whole mesh): the cells, the
 * nodes they use (in range; vtk_cells names an element with others) and the nodes' new
 * numbers, on every thread. Lists that are the first cells or nodes are left NULL. */
static int piece_make(const hk_mesh *m, const uint8_t *keep, vtu_piece *pc)
{
    const int64_t nn = m->nnodes, ne = m->cells.n;
    memset(pc, 0, sizeof *pc);
    pc->nn = nn, pc->ne = ne;
    if (!keep) return 0;
    int ierr = 0;
    uint8_t *used = NULL;
    HK_TRY(kept_list(ne, keep, &pc->cells, &pc->ne, NULL));
    HK_TRY(hk_calloc((size_t)(nn > 0 ? nn : 1), 1, &used));
    HK_TRY(hk_malloc((size_t)(nn > 0 ? nn : 1) * sizeof *pc->index, &pc->index));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < pc->ne; j++) {
        const int64_t e = pc->cells[j];
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++) {
            const int32_t v = m->cells.nodes[k];
            if (v >= 0 && v < nn) {
#pragma omp atomic write
                used[v] = 1;
            }
        }
    }
    HK_TRY(kept_list(nn, used, &pc->nodes, &pc->nn, pc->index));
    /* the first nodes or cells in order: the arrays as they lie, without gathering */
    if (pc->nn == 0 || pc->nodes[pc->nn - 1] == pc->nn - 1) {
        free(pc->nodes);
        pc->nodes = NULL;
    }
    if (pc->ne == 0 || pc->cells[pc->ne - 1] == pc->ne - 1) {
        free(pc->cells);
        pc->cells = NULL;
    }
fail:
    free(used);
    if (ierr) piece_free(pc);
    return ierr;
}

/* Cells in VTK's node order: connectivity (Int32: node indices are 32-bit), offsets (Int32
 * when they fit) and types, filled in parallel, for the cells of the piece pc with its nodes'
 * numbers. The first element the writer cannot map, in element order, gets the message. */
static int vtk_cells(const char *path, const hk_mesh *m, const vtu_piece *pc, vtu_cells *out)
{
    const int64_t nn = m->nnodes, ne = pc->ne;
#define CELL(j) (pc->cells ? pc->cells[j] : (j))
    int ierr = 0;
    int32_t *conn = NULL;
    int64_t *offs = NULL;
    uint8_t *types = NULL;
    HK_TRY(hk_malloc((size_t)(ne > 0 ? ne : 1) * sizeof(int64_t), &offs));
    HK_TRY(hk_malloc((size_t)(ne > 0 ? ne : 1), &types));
    int64_t bad = ne; /* the first element that cannot be written */
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t j = 0; j < ne; j++) {
        /* element types, VTK numbers and node order: mesh's table (fem.h) */
        const int64_t e = CELL(j);
        const int t = m->cells.type[e];
        const hk_eltype_info *el = hk_eltype_get((hk_eltype)t);
        const int64_t len = m->cells.ptr[e + 1] - m->cells.ptr[e];
        if (!el || !hk_eltype_vtk_order((hk_eltype)t) || el->dim < 2 || len != el->nnodes) {
            if (j < bad) bad = j;
            offs[j] = 0, types[j] = 0;
            continue;
        }
        offs[j] = hk_eltype_vtk_nnodes((hk_eltype)t); /* pyr14: its first 13 nodes */
        types[j] = (uint8_t)el->vtk_type;
    }
    if (bad < ne) {
        const int64_t e = CELL(bad);
        const int t = m->cells.type[e];
        const hk_eltype_info *el = hk_eltype_get((hk_eltype)t);
        HK_TRY_CHECK(0, HK_ERR_UNSUPPORTED,
                     "hk_vtu_write '%s': element %lld is a %s with %lld nodes, which is not a "
                     "2D/3D cell the VTU writer knows",
                     path, (long long)(m->cells.tag ? m->cells.tag[e] : e + 1),
                     el ? el->name : "element of unknown type",
                     (long long)(m->cells.ptr[e + 1] - m->cells.ptr[e]));
    }
    int64_t nconn = 0; /* running sum: offsets[e] = entries up to and including e */
    for (int64_t e = 0; e < ne; e++)
        offs[e] = nconn += offs[e];
    HK_TRY(hk_malloc((size_t)(nconn > 0 ? nconn : 1) * sizeof(int32_t), &conn));
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t j = 0; j < ne; j++) {
        const int64_t e = CELL(j);
        const int *order = hk_eltype_vtk_order((hk_eltype)m->cells.type[e]);
        const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
        const int64_t b = j ? offs[j - 1] : 0, nv = offs[j] - b;
        for (int64_t a = 0; a < nv; a++) {
            const int32_t v = nodes[order[a]];
            if (v < 0 || v >= nn) {
                bad = j < bad ? j : bad;
                continue;
            }
            conn[b + a] = pc->index ? pc->index[v] : v; /* the piece's number */
        }
    }
    if (bad < ne) {
        const int64_t e = CELL(bad);
        const int *order = hk_eltype_vtk_order((hk_eltype)m->cells.type[e]);
        const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
        int32_t v = 0;
        for (int64_t a = 0; a < offs[bad] - (bad ? offs[bad - 1] : 0); a++)
            if (nodes[order[a]] < 0 || nodes[order[a]] >= nn) v = nodes[order[a]];
        HK_TRY_CHECK(0, HK_ERR_MODEL,
                     "hk_vtu_write '%s': element %lld refers to node %d outside 0..%lld", path,
                     (long long)(m->cells.tag ? m->cells.tag[e] : e + 1), v, (long long)nn - 1);
    }
    out->offs64 = nconn > INT32_MAX;
    if (!out->offs64) { /* narrow in place: entry e is read before anything overwrites it */
        int32_t *o32 = (int32_t *)offs;
        for (int64_t e = 0; e < ne; e++)
            o32[e] = (int32_t)offs[e];
    }
    out->conn = conn, out->offs = offs, out->types = types, out->nconn = nconn;
    return 0;
fail:
    free(conn);
    free(offs);
    free(types);
    return ierr;
#undef CELL
}

/* HOOKE_OUTPUT_PROFILE=1: the time of each phase of a write on stderr, and the page cache
 * before and after; =2 also waits for the disk (fsync) and times it (docs/output.md, "Where
 * the output stage's time goes"). */
typedef struct {
    int on;              /* the level: 0 off, 1 phases, 2 and fsync */
    double t0, t;        /* the write's start, the current phase's start */
    double mesh, fields; /* bytes of the mesh's arrays and of the fields' */
    double mem[4];       /* /proc/meminfo at the start: MemFree, Cached, Dirty, Writeback (kB) */
    struct rusage ru;    /* the process's CPU times and context switches at the start */
    struct rusage ru_t;  /* the same at the current phase's start */
} vtu_prof;

static void prof_step(vtu_prof *p, const char *what, double bytes);

static double tv_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* MemFree, Cached, Dirty and Writeback of /proc/meminfo in kB (-1 where unknown). */
static void page_cache_state(double v[4])
{
    static const char *const keys[4] = {"MemFree:", "Cached:", "Dirty:", "Writeback:"};
    for (int k = 0; k < 4; k++)
        v[k] = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f))
        for (int k = 0; k < 4; k++)
            if (!strncmp(line, keys[k], strlen(keys[k]))) v[k] = atof(line + strlen(keys[k]));
    fclose(f);
}

static void prof_begin(vtu_prof *p)
{
    const char *e = getenv("HOOKE_OUTPUT_PROFILE");
    memset(p, 0, sizeof *p);
    p->on = e && *e && strcmp(e, "0") ? (atoi(e) >= 2 ? 2 : 1) : 0;
    if (!p->on) return;
    page_cache_state(p->mem);
    getrusage(RUSAGE_SELF, &p->ru);
    p->ru_t = p->ru;
    p->t0 = p->t = hk_time();
}

/* Level 2: the disk's time for the file, as a phase of its own. */
static void prof_fsync(vtu_prof *p, int fd)
{
    if (p->on < 2) return;
    fsync(fd);
    prof_step(p, "fsync (HOOKE_OUTPUT_PROFILE=2)", 0);
}

/* The phase that ends now: its name, and its bytes and rate when bytes > 0. */
static void prof_step(vtu_prof *p, const char *what, double bytes)
{
    if (!p->on) return;
    const double now = hk_time(), s = now - p->t;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* the phase's CPU: user time with little system time is conversion or waiting threads
     * spinning; system time is the kernel's copy (or its lock); faults: pages taken */
    char cpu[96];
    snprintf(cpu, sizeof cpu, "  (user %.2f s, sys %.2f s, %ld faults)",
             tv_seconds(ru.ru_utime) - tv_seconds(p->ru_t.ru_utime),
             tv_seconds(ru.ru_stime) - tv_seconds(p->ru_t.ru_stime),
             ru.ru_minflt - p->ru_t.ru_minflt);
    if (bytes > 0)
        fprintf(stderr, "output profile: %-34s %9.3f s %10.1f MB %8.2f GB/s%s\n", what, s,
                bytes / 1e6, s > 0 ? bytes / 1e9 / s : 0.0, cpu);
    else
        fprintf(stderr, "output profile: %-34s %9.3f s%s\n", what, s, cpu);
    p->t = now, p->ru_t = ru;
}

static void prof_end(vtu_prof *p, const char *path)
{
    if (!p->on) return;
    const double s = hk_time() - p->t0, all = p->mesh + p->fields;
    double m[4];
    page_cache_state(m);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
#define SECONDS(tv) ((double)(tv).tv_sec + 1e-6 * (double)(tv).tv_usec)
    fprintf(stderr,
            "output profile: %s: %.3f s, %.1f MB (%.2f GB/s); mesh arrays %.1f MB (%.0f %%), "
            "fields %.1f MB\n",
            path, s, all / 1e6, s > 0 ? all / 1e9 / s : 0.0, p->mesh / 1e6,
            all > 0 ? 100 * p->mesh / all : 0.0, p->fields / 1e6);
    fprintf(stderr,
            "output profile: page cache before -> after (MB): free %.0f -> %.0f, cached %.0f -> "
            "%.0f, dirty %.0f -> %.0f, writeback %.0f -> %.0f\n",
            p->mem[0] / 1e3, m[0] / 1e3, p->mem[1] / 1e3, m[1] / 1e3, p->mem[2] / 1e3, m[2] / 1e3,
            p->mem[3] / 1e3, m[3] / 1e3);
    /* system time near the wall time on one thread: the kernel copying; far below it with
     * many voluntary switches: waiting (for the disk, or for memory) */
    fprintf(stderr,
            "output profile: process CPU during the write: user %.3f s, system %.3f s, "
            "%ld voluntary and %ld involuntary context switches, %ld page faults\n",
            SECONDS(ru.ru_utime) - SECONDS(p->ru.ru_utime),
            SECONDS(ru.ru_stime) - SECONDS(p->ru.ru_stime), ru.ru_nvcsw - p->ru.ru_nvcsw,
            ru.ru_nivcsw - p->ru.ru_nivcsw, ru.ru_minflt - p->ru.ru_minflt);
#undef SECONDS
}

/* The checks of hk_vtu_write's arguments. */
static int vtu_check(const char *path, const hk_mesh *m, const hk_fields *f,
                     const hk_vtu_options *opt)
{
    HK_CHECK(path && m, HK_ERR_ARG, "hk_vtu_write: path or mesh is NULL");
    const hk_vtu_compression comp = opt->ascii ? HK_VTU_NONE : opt->compression;
    const int level = opt->level ? opt->level : 1;
    HK_CHECK(comp == HK_VTU_NONE || comp == HK_VTU_ZLIB || comp == HK_VTU_LZ4, HK_ERR_ARG,
             "hk_vtu_write '%s': compression %d is not none, zlib or lz4", path, (int)comp);
    HK_CHECK(comp != HK_VTU_LZ4 || hk_vtu_have_lz4(), HK_ERR_NOT_BUILT,
             "hk_vtu_write '%s': this build has no LZ4 compression; install liblz4-dev "
             "(scripts/install-deps.sh) and rebuild, or use compression zlib or none",
             path);
    HK_CHECK(level >= 1 && level <= 9, HK_ERR_ARG,
             "hk_vtu_write '%s': zlib level %d is outside 1..9", path, opt->level);
    const int64_t nn = m->nnodes, ne = m->cells.n;
    if (f)
        HK_CHECK(f->nnodes == nn && f->ncells == ne, HK_ERR_ARG,
                 "hk_vtu_write '%s': the fields are for %lld nodes and %lld cells but the mesh has "
                 "%lld and %lld; pass the fields computed on this mesh",
                 path, (long long)f->nnodes, (long long)f->ncells, (long long)nn, (long long)ne);
    const uint16_t one = 1;
    HK_CHECK(*(const uint8_t *)&one == 1, HK_ERR_UNSUPPORTED,
             "hk_vtu_write: big-endian hosts are not supported; use the ascii option");
    return 0;
}

/* The arrays of m's piece pc (NULL: the whole mesh), the cells cl and the non-NULL fields of
 * f (NULL: none), in the order they appear in the file; fields as Float32 on request. Offsets
 * are left 0. */
static void plan_arrays(vtu_plan *pl, const hk_mesh *m, const hk_fields *f,
                        const hk_vtu_options *opt, const vtu_cells *cl, const vtu_piece *pc)
{
    const int64_t nn = pc ? pc->nn : m->nnodes, ne = pc ? pc->ne : m->cells.n;
    const int64_t *pn = pc ? pc->nodes : NULL, *pe = pc ? pc->cells : NULL; /* gathered by */
    memset(pl, 0, sizeof *pl);
    const int fw = opt->float32 ? 4 : 8;
    const char *ft = opt->float32 ? "Float32" : "Float64";
#define ADD(nm, ty, nc, nt, wd, dp, tk, f32, cn)                                                   \
    pl->arr[pl->narr++] = (vtu_array){(nm), (ty), (nc), (nt), (wd), (dp), (tk), (f32), (cn), 0, 0}
#define FIELD(nm, nc, nt, dp, tk, cn) ADD(nm, ft, nc, nt, fw, dp, tk, opt->float32, cn)
    ADD("Points", "Float64", 3, nn, 8, m->coords, pn, 0, NULL);
    ADD("connectivity", "Int32", 1, cl->nconn, 4, cl->conn, NULL, 0, NULL);
    ADD("offsets", cl->offs64 ? "Int64" : "Int32", 1, ne, cl->offs64 ? 8 : 4, cl->offs, NULL, 0,
        NULL);
    ADD("types", "UInt8", 1, ne, 1, cl->types, NULL, 0, NULL);
    pl->npoint_first = pl->narr;
    const char *const *tn = f && f->axisymmetric ? axi_names : tensor_names;
    if (f) {
        if (f->u) FIELD("displacement", 3, nn, f->u, pn, NULL);
        if (f->stress) FIELD("stress", 6, nn, f->stress, pn, tn);
        if (f->strain) FIELD("strain", 6, nn, f->strain, pn, tn);
        if (f->von_mises) FIELD("von_mises", 1, nn, f->von_mises, pn, NULL);
        if (f->principal) FIELD("principal_stress", 3, nn, f->principal, pn, NULL);
        if (f->reaction) FIELD("reaction", 3, nn, f->reaction, pn, NULL);
        if (f->mode_shape) FIELD("mode_shape", 3, nn, f->mode_shape, pn, NULL);
    }
    pl->ncell_first = pl->narr;
    pl->has_region = m->cell_region != NULL;
    if (m->cell_region) ADD("region", "Int32", 1, ne, 4, m->cell_region, pe, 0, NULL);
    if (f) {
        if (f->cell_stress) FIELD("element_stress", 6, ne, f->cell_stress, pe, tn);
        if (f->cell_von_mises) FIELD("element_von_mises", 1, ne, f->cell_von_mises, pe, NULL);
    }
#undef FIELD
#undef ADD
    pl->nn = nn, pl->ne = ne, pl->ascii = opt->ascii;
    pl->has_vm = f && f->von_mises, pl->has_cell_vm = f && f->cell_von_mises;
    pl->vectors = f && f->u ? "displacement" : f && f->mode_shape ? "mode_shape" : NULL;
    pl->fdata = f && f->nfield_data > 0 ? f : NULL;
    const hk_vtu_compression comp = opt->ascii ? HK_VTU_NONE : opt->compression;
    pl->compressor = comp == HK_VTU_ZLIB  ? "vtkZLibDataCompressor"
                     : comp == HK_VTU_LZ4 ? "vtkLZ4DataCompressor"
                                          : NULL;
}

/* Array k is the mesh's (points, cells, regions), known before the fields are. */
static int mesh_array(const vtu_plan *pl, int k)
{
    return k < pl->npoint_first || (pl->has_region && k == pl->ncell_first);
}

/* Uncompressed: every offset from the sizes before it; the appended section's length. */
static uint64_t plan_offsets(vtu_plan *pl)
{
    uint64_t off = 0;
    for (int k = 0; k < pl->narr; k++)
        pl->arr[k].offset = off, off += sizeof(uint64_t) + array_bytes(&pl->arr[k]);
    return off;
}

/* Before a file is created at path, a plain file already there (one link) is removed: writing
 * over a file's contents (O_TRUNC) makes ext4 and XFS start writing the whole new file to
 * the disk when it is closed, which made the write 2.5-4.5x slower (docs/output.md); the
 * new file gets a fresh inode instead. A symbolic link, a file with other hard links or a
 * device keeps being written through, as before. The removed file's bytes, 0 if none. */
static double remove_old(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) return 0;
    return unlink(path) == 0 ? (double)st.st_size : 0;
}

/* hk_vtu_write (keep NULL) and hk_vtu_write_cells. */
static int vtu_write(const char *path, const hk_mesh *m, const hk_fields *f,
                     const hk_vtu_options *opt, const uint8_t *keep)
{
    static const hk_vtu_options plain = {0};
    if (!opt) opt = &plain;
    HK_CALL(vtu_check(path, m, f, opt));
    int writers;
    HK_CALL(output_writers(path, &writers));
    const int ascii = opt->ascii;
    const hk_vtu_compression comp = ascii ? HK_VTU_NONE : opt->compression;
    const int level = opt->level ? opt->level : 1;
    int ierr = 0, fd = -1;
    FILE *fp = NULL;
    char *head = NULL;
    vtu_plan pl;
    vtu_cells cl = {0};
    vtu_piece pc = {0};
    vtu_out o;
    memset(&o, 0, sizeof o);
    vtu_prof prof;
    prof_begin(&prof);
    const double old = remove_old(path);
    if (old > 0) prof_step(&prof, "remove the file it replaces", old);
    HK_TRY(piece_make(m, keep, &pc));
    if (keep && prof.on)
        fprintf(stderr,
                "output profile: the piece: %lld of %lld cells (%s), %lld of %lld nodes (%s)\n",
                (long long)pc.ne, (long long)m->cells.n, pc.cells ? "gathered" : "the first",
                (long long)pc.nn, (long long)m->nnodes, pc.nodes ? "gathered" : "the first");
    if (keep) prof_step(&prof, "the piece's cells and nodes", 0);
    HK_TRY(vtk_cells(path, m, &pc, &cl));
    prof_step(&prof, "cells in VTK's order", 0);
    plan_arrays(&pl, m, f, opt, &cl, &pc);

    if (ascii) {
        fp = fopen(path, "w");
        HK_TRY_CHECK(fp, HK_ERR_IO, "could not open '%s' for writing: %s (does its folder exist?)",
                     path, strerror(errno));
        put_head(fp, &pl, 0);
        const int bad = ferror(fp);
        const int closed = fclose(fp);
        fp = NULL;
        HK_TRY_CHECK(!bad && closed == 0, HK_ERR_IO,
                     "could not write '%s' (disk full or no permission?)", path);
        prof_step(&prof, "ascii document", 0);
        prof_end(&prof, path);
        goto fail; /* done: free the cell arrays */
    }

    /* uncompressed: every offset known, the head first and exact; compressed: the head's room
     * first (its length does not depend on the offsets), the head itself last */
    size_t hlen = 0;
    if (comp == HK_VTU_NONE) {
        plan_offsets(&pl);
        HK_TRY(head_text(&pl, 0, &head, &hlen));
    } else {
        HK_TRY(head_text(&pl, 1, &head, &hlen));
        free(head);
        head = NULL;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    HK_TRY_CHECK(fd >= 0, HK_ERR_IO, "could not open '%s' for writing: %s (does its folder exist?)",
                 path, strerror(errno));
    out_begin(&o, fd, hlen, writers);
    prof_step(&prof, "open", 0);
    int e;
    if (comp == HK_VTU_NONE) {
        e = out_write(&o, head, hlen, 0);
        if (e) note_error(&o, e, 0);
        prof_step(&prof, "XML head", (double)hlen);
        for (int k = 0; k < pl.narr && !o.err_errno; k++) {
            write_plain(&o, &pl.arr[k], 1);
            *(mesh_array(&pl, k) ? &prof.mesh : &prof.fields) += (double)pl.arr[k].size;
            prof_step(&prof, pl.arr[k].name, (double)pl.arr[k].size);
        }
    } else {
        uint64_t off = 0;
        for (int k = 0; k < pl.narr && !o.err_errno && !o.err_zip; k++) {
            pl.arr[k].offset = off;
            write_compressed(&o, &pl.arr[k], comp, level);
            off += pl.arr[k].size;
            *(mesh_array(&pl, k) ? &prof.mesh : &prof.fields) += (double)pl.arr[k].size;
            prof_step(&prof, pl.arr[k].name, (double)pl.arr[k].size);
        }
        size_t len2 = 0;
        HK_TRY(head_text(&pl, 1, &head, &len2));
        HK_TRY_CHECK(len2 == hlen, HK_ERR_INTERNAL,
                     "hk_vtu_write '%s': the XML head changed length (%zu, %zu bytes)", path, hlen,
                     len2);
        e = out_write(&o, head, hlen, 0);
        if (e) note_error(&o, e, 0);
        prof_step(&prof, "XML head", (double)hlen);
    }
    HK_TRY_CHECK(!o.err_zip, HK_ERR_INTERNAL, "hk_vtu_write '%s': a block did not compress", path);
    {
        const vtu_array *last = &pl.arr[pl.narr - 1];
        e = out_write(&o, vtu_tail, sizeof vtu_tail - 1, o.base + last->offset + last->size);
        if (e) note_error(&o, e, 0);
    }
    out_end(&o);
    HK_TRY_CHECK(!o.err_errno, HK_ERR_IO, "could not write '%s': %s (disk full or no permission?)",
                 path, strerror(o.err_errno));
    prof_step(&prof, "end tag", 0);
    prof_fsync(&prof, fd);
    HK_TRY_CHECK(close(fd) == 0, HK_ERR_IO, "could not write '%s': %s (disk full?)", path,
                 strerror(errno));
    fd = -1;
    prof_step(&prof, "close", 0);
    prof_end(&prof, path);

fail:
    out_end(&o);
    if (fd >= 0) close(fd);
    if (ierr) remove(path); /* no half-written file that ParaView would choke on */
    free(head);
    cells_free(&cl);
    piece_free(&pc);
    return ierr;
}

int hk_vtu_write(const char *path, const hk_mesh *m, const hk_fields *f, const hk_vtu_options *opt)
{
    return vtu_write(path, m, f, opt, NULL);
}

int hk_vtu_write_cells(const char *path, const hk_mesh *m, const hk_fields *f,
                       const hk_vtu_options *opt, const uint8_t *keep)
{
    HK_CHECK(keep, HK_ERR_ARG, "hk_vtu_write_cells '%s': no list of the cells to keep",
             path ? path : "(null)");
    return vtu_write(path, m, f, opt, keep);
}

/* ---- the mesh's part written early ------------------------------------------------------ */

struct hk_vtu_early {
    char *path, *tmp; /* the file, and the temporary name it is written under */
    const hk_mesh *m;
    hk_vtu_options opt;
    hk_fields layout; /* which fields the file will hold (their values unused) */
    const uint8_t *keep; /* the cells of m the file holds (NULL: all) */
    vtu_piece piece;     /* those cells and their nodes, made by the thread */
    int fd;
    pthread_t thread;
    int joined;
    atomic_int stop;    /* cancelled: the thread stops after its current array */
    atomic_int enough;  /* finish has come: no more filling ahead */
    int64_t fill_ahead; /* the most bytes of the fields' part to fill ahead */
    /* the thread's result */
    int ok;        /* head and mesh arrays written */
    int64_t nconn; /* the cells' sizes (their arrays are freed once written) */
    int offs64;
    char *head; /* the head it wrote */
    size_t hlen;
    double t_cells, seconds, bytes; /* its cells' time, its whole time, the bytes it wrote */
    double t_filled, filled;        /* the filling ahead: its time and bytes */
};

/* The fields' part (their arrays and the end tag) filled with zeros ahead, up to
 * e->fill_ahead bytes and until finish or cancel says stop: its pages are then in the page
 * cache when the fields come, and the output stage copies into them instead of taking new
 * pages from the kernel, which costs about 3x the kernel's time of the copy alone
 * (docs/output.md). finish writes every one of these bytes again. */
static void fill_ahead(hk_vtu_early *e, const vtu_plan *pl, uint64_t base)
{
    const double t0 = hk_time();
    unsigned char *zeros = calloc(1, VTU_PIECE);
    uint64_t budget = e->fill_ahead > 0 ? (uint64_t)e->fill_ahead : 0;
    const vtu_array *last = &pl->arr[pl->narr - 1];
    for (int k = 0; k <= pl->narr && zeros; k++) {
        if (k < pl->narr && mesh_array(pl, k)) continue;
        uint64_t at =
            base + (k < pl->narr ? pl->arr[k].offset : last->offset + 8 + array_bytes(last));
        uint64_t len = k < pl->narr ? 8 + array_bytes(&pl->arr[k]) : sizeof vtu_tail - 1;
        while (len > 0 && budget > 0 && !atomic_load(&e->stop) && !atomic_load(&e->enough)) {
            const size_t n = (size_t)MIN(MIN(len, (uint64_t)VTU_PIECE), budget);
            if (pwrite_all(e->fd, zeros, n, at)) goto done; /* finish's writes will say it */
            at += n, len -= n, budget -= n;
            e->filled += (double)n;
        }
    }
done:
    free(zeros);
    e->t_filled = hk_time() - t0;
}

/* The thread: cells in VTK's order, the head for the announced fields, and the mesh's arrays
 * at their offsets, on this thread alone (the solve has the others). */
static void *early_main(void *arg)
{
    hk_vtu_early *e = arg;
    const double t0 = hk_time();
    omp_set_num_threads(1); /* this thread's own setting: its loops make no team */
    vtu_cells cl = {0};
    vtu_plan pl;
    /* the final write reports a failure of these */
    if (piece_make(e->m, e->keep, &e->piece) || vtk_cells(e->path, e->m, &e->piece, &cl))
        return NULL;
    e->t_cells = hk_time() - t0;
    plan_arrays(&pl, e->m, &e->layout, &e->opt, &cl, &e->piece);
    plan_offsets(&pl);
    if (head_text(&pl, 0, &e->head, &e->hlen)) goto done;
    vtu_out o;
    memset(&o, 0, sizeof o); /* this thread alone, with pwrite */
    o.fd = e->fd, o.base = e->hlen, o.err_errno = pwrite_all(e->fd, e->head, e->hlen, 0);
    e->bytes = (double)e->hlen;
    for (int k = 0; k < pl.narr && !o.err_errno && !atomic_load(&e->stop); k++)
        if (mesh_array(&pl, k)) {
            write_plain(&o, &pl.arr[k], 0);
            e->bytes += (double)pl.arr[k].size;
        }
    e->nconn = cl.nconn, e->offs64 = cl.offs64;
    e->ok = !o.err_errno && !atomic_load(&e->stop);
    e->seconds = hk_time() - t0;
    cells_free(&cl);
    if (e->ok) fill_ahead(e, &pl, o.base); /* uses the offsets only */
    return NULL;
done:
    cells_free(&cl);
    return NULL;
}

hk_vtu_early *hk_vtu_early_start(const char *path, const hk_mesh *m, const hk_fields *layout,
                                 const hk_vtu_options *opt, int64_t fill_ahead)
{
    return hk_vtu_early_start_cells(path, m, layout, opt, fill_ahead, NULL);
}

hk_vtu_early *hk_vtu_early_start_cells(const char *path, const hk_mesh *m,
                                       const hk_fields *layout, const hk_vtu_options *opt,
                                       int64_t fill_ahead, const uint8_t *keep)
{
    static const hk_vtu_options plain = {0};
    if (!opt) opt = &plain;
    const char *sw = getenv("HOOKE_OUTPUT_EARLY");
    if (!path || !m || opt->ascii || opt->compression != HK_VTU_NONE || (sw && !strcmp(sw, "0")))
        return NULL;
    const uint16_t one = 1;
    struct stat st;
    if (*(const uint8_t *)&one != 1 ||
        (lstat(path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_nlink != 1)))
        return NULL; /* written through as before by hk_vtu_write */
    hk_vtu_early *e = calloc(1, sizeof *e);
    const size_t n = strlen(path) + 40;
    if (!e || !(e->path = strdup(path)) || !(e->tmp = malloc(n))) goto fail;
    snprintf(e->tmp, n, "%s.part-%ld", path, (long)getpid());
    e->m = m, e->opt = *opt, e->fd = -1, e->keep = keep;
    e->fill_ahead = sw && !strcmp(sw, "mesh") ? 0 : fill_ahead;
    if (layout) e->layout = *layout;
    e->layout.nnodes = m->nnodes, e->layout.ncells = m->cells.n;
    atomic_init(&e->stop, 0);
    atomic_init(&e->enough, 0);
    e->fd = open(e->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (e->fd < 0) goto fail;
    if (hk_thread_create(&e->thread, early_main, e) != 0) goto fail;
    return e;
fail:
    if (e && e->fd >= 0) {
        close(e->fd);
        unlink(e->tmp);
    }
    if (e) free(e->path), free(e->tmp);
    free(e);
    return NULL;
}

void hk_vtu_early_wait(hk_vtu_early *e)
{
    if (!e || e->joined) return;
    pthread_join(e->thread, NULL);
    e->joined = 1;
}

static void early_free(hk_vtu_early *e)
{
    if (e->fd >= 0) close(e->fd);
    if (e->tmp) unlink(e->tmp);
    free(e->head);
    free(e->path);
    free(e->tmp);
    piece_free(&e->piece);
    free(e);
}

void hk_vtu_early_cancel(hk_vtu_early *e)
{
    if (!e) return;
    atomic_store(&e->stop, 1);
    hk_vtu_early_wait(e);
    early_free(e);
}

int hk_vtu_early_finish(hk_vtu_early *e, const char *path, const hk_fields *f)
{
    HK_CHECK(e, HK_ERR_ARG, "hk_vtu_early_finish: no early write");
    const hk_mesh *m = e->m;
    const hk_vtu_options opt = e->opt;
    vtu_prof prof;
    prof_begin(&prof);
    atomic_store(&e->enough, 1); /* what is not filled ahead yet, the fields' writes fill */
    hk_vtu_early_wait(e);
    if (prof.on && e->ok) {
        const double w = e->seconds - e->t_cells;
        fprintf(stderr, "output profile: %-34s %9.3f s (during the solve)\n",
                "cells in VTK's order, early", e->t_cells);
        fprintf(stderr, "output profile: %-34s %9.3f s %10.1f MB %8.2f GB/s (during the solve)\n",
                "head and mesh arrays, early", w, e->bytes / 1e6, w > 0 ? e->bytes / 1e9 / w : 0.0);
        fprintf(stderr,
                "output profile: %-34s %9.3f s %10.1f MB %8.2f GB/s (during the solve; of %.1f MB "
                "allowed)\n",
                "fields' pages filled ahead, early", e->t_filled, e->filled / 1e6,
                e->t_filled > 0 ? e->filled / 1e9 / e->t_filled : 0.0, (double)e->fill_ahead / 1e6);
    }
    prof_step(&prof, "wait for the early part", 0);
    int ierr = 0, same = 0;
    char *head = NULL;
    vtu_plan pl;
    vtu_out o;
    memset(&o, 0, sizeof o);
    int writers;
    if (output_writers(path ? path : e->path, &writers)) {
        hk_vtu_early_cancel(e);
        return HK_ERR_ARG;
    }
    if (e->ok && path && !strcmp(path, e->path) &&
        (!f || (f->nnodes == m->nnodes && f->ncells == m->cells.n))) {
        /* the file of these fields is the early one when its head is: same arrays, offsets */
        const vtu_cells cl = {.nconn = e->nconn, .offs64 = e->offs64};
        plan_arrays(&pl, m, f, &opt, &cl, &e->piece);
        plan_offsets(&pl);
        size_t hlen = 0;
        same =
            head_text(&pl, 0, &head, &hlen) == 0 && hlen == e->hlen && !memcmp(head, e->head, hlen);
    }
    if (!same) { /* other fields than announced, or the early part failed: the whole file */
        const uint8_t *keep = e->keep;
        free(head);
        early_free(e);
        if (prof.on) fprintf(stderr, "output profile: the early part does not serve: whole file\n");
        return vtu_write(path, m, f, &opt, keep);
    }
    prof.mesh = e->bytes;
    out_begin(&o, e->fd, e->hlen, writers);
    for (int k = 0; k < pl.narr && !o.err_errno; k++)
        if (!mesh_array(&pl, k)) {
            write_plain(&o, &pl.arr[k], 1);
            prof.fields += (double)pl.arr[k].size;
            prof_step(&prof, pl.arr[k].name, (double)pl.arr[k].size);
        }
    {
        const vtu_array *last = &pl.arr[pl.narr - 1];
        const int err =
            out_write(&o, vtu_tail, sizeof vtu_tail - 1, o.base + last->offset + last->size);
        if (err) note_error(&o, err, 0);
    }
    out_end(&o);
    HK_TRY_CHECK(!o.err_errno, HK_ERR_IO, "could not write '%s': %s (disk full or no permission?)",
                 path, strerror(o.err_errno));
    prof_step(&prof, "end tag", 0);
    prof_fsync(&prof, e->fd);
    const int closed = close(e->fd);
    e->fd = -1;
    HK_TRY_CHECK(closed == 0, HK_ERR_IO, "could not write '%s': %s (disk full?)", path,
                 strerror(errno));
    prof_step(&prof, "close", 0);
    {
        struct stat st;
        HK_TRY_CHECK(lstat(path, &st) != 0 || (S_ISREG(st.st_mode) && st.st_nlink == 1), HK_ERR_IO,
                     "could not write '%s': it is no longer a plain file (a link or folder was "
                     "put there while the case ran); remove it and run again",
                     path);
    }
    const double old = remove_old(path);
    HK_TRY_CHECK(rename(e->tmp, path) == 0, HK_ERR_IO,
                 "could not write '%s': %s (renaming '%s' to it)", path, strerror(errno), e->tmp);
    free(e->tmp); /* renamed: nothing to remove */
    e->tmp = NULL;
    prof_step(&prof, old > 0 ? "replace the old file, rename" : "rename", old);
    prof_end(&prof, path);
fail:
    out_end(&o);
    free(head);
    early_free(e);
    return ierr;
}

/* An attribute value with XML's special characters escaped. */
void hk_pp_put_escaped(FILE *fp, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", fp);
            break;
        case '<':
            fputs("&lt;", fp);
            break;
        case '>':
            fputs("&gt;", fp);
            break;
        case '"':
            fputs("&quot;", fp);
            break;
        default:
            fputc(*s, fp);
        }
    }
}

int hk_pvd_write(const char *path, int nfiles, const char *const *vtu_files,
                 const char *const *names)
{
    return hk_pvd_write_times(path, nfiles, vtu_files, names, NULL);
}

int hk_pvd_write_times(const char *path, int nfiles, const char *const *vtu_files,
                       const char *const *names, const double *times)
{
    HK_CHECK(path && nfiles >= 0 && (nfiles == 0 || vtu_files), HK_ERR_ARG,
             "hk_pvd_write: path is NULL or the file list is missing");
    for (int i = 0; i < nfiles; i++)
        HK_CHECK(vtu_files[i], HK_ERR_ARG, "hk_pvd_write '%s': file %d of the list is NULL", path,
                 i);
    FILE *fp = fopen(path, "w");
    HK_CHECK(fp, HK_ERR_IO, "could not open '%s' for writing: %s (does its folder exist?)", path,
             strerror(errno));
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
          "  <Collection>\n",
          fp);
    for (int i = 0; i < nfiles; i++) {
        /* one timestep per load case (mode): ParaView's time slider steps through them */
        if (times)
            fprintf(fp, "    <DataSet timestep=\"%.17g\" group=\"\" part=\"0\" file=\"", times[i]);
        else
            fprintf(fp, "    <DataSet timestep=\"%d\" group=\"\" part=\"0\" file=\"", i);
        hk_pp_put_escaped(fp, vtu_files[i]);
        fputs("\"", fp);
        if (names && names[i]) {
            fputs(" name=\"", fp);
            hk_pp_put_escaped(fp, names[i]);
            fputs("\"", fp);
        }
        fputs("/>\n", fp);
    }
    fputs("  </Collection>\n</VTKFile>\n", fp);
    const int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
        remove(path);
        return hk_error_set(HK_ERR_IO, __FILE__, __LINE__,
                            "could not write '%s' (disk full or no permission?)", path);
    }
    return 0;
}
