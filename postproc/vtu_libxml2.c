/* The former .vtu writer, through libxml2's xmlTextWriter, kept as the baseline that
 * `hooke bench output` measures the direct writer (vtu.c) against. Not used by hooke run.
 *
 * Every array goes into one <AppendedData encoding="base64"> section; DataArray offsets count
 * base64 characters from the byte after the leading '_'. header_type is UInt64.
 *   uncompressed: base64(UInt64 nbytes + data), one stream per array;
 *   zlib:         base64([nblocks, blocksize, last partial block size, csize_1..csize_n])
 *                 followed by base64(compressed blocks), blocks of 32 KiB, as
 *                 vtkZLibDataCompressor writes and vtkXMLDataParser reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlwriter.h>
#include <zlib.h>

#include "pp_impl.h"

#define VTU_BLOCK 32768 /* uncompressed bytes per zlib block (VTK's default) */
#define VTU_ZLEVEL 1    /* zlib level: 1 is several times faster than 6 for ~10% larger files */

/* One array to write. */
typedef struct {
    const char *name;
    const char *type; /* "Float64", "Int64", "Int32", "UInt8" */
    int ncomp;
    int64_t ntuples;
    size_t word;                   /* bytes per value */
    const void *data;              /* ntuples * ncomp values */
    const char *const *comp_names; /* NULL or ncomp names */
    /* binary modes: the VTK header and the body (the data itself, or its zlib blocks) */
    uint64_t *hdr;
    size_t hdr_bytes;
    unsigned char *zbody; /* compressed body (owned), NULL when uncompressed */
    size_t body_bytes;
    size_t enc_len; /* base64 characters of this array in the appended section */
} vtu_array;

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Append the base64 encoding of n bytes to out (room for 4*ceil(n/3) chars), return the count. */
static size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64[v >> 18], out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63], out[o++] = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64[v >> 18], out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

static size_t b64_len(size_t n)
{
    return 4 * ((n + 2) / 3);
}

/* Prepare array a for the appended section: its VTK header, its body (compressed in
 * zlib blocks when asked) and the length of its base64 text, so the offsets are known
 * before anything is written. The base64 text itself is produced while writing. */
static int prepare_array(vtu_array *a, int compress)
{
    size_t nbytes = (size_t)a->ntuples * (size_t)a->ncomp * a->word;
    int ierr = 0;
    if (!compress) {
        /* header and data form one base64 stream */
        HK_CALL(hk_malloc(sizeof(uint64_t), &a->hdr));
        a->hdr[0] = nbytes;
        a->hdr_bytes = 8, a->body_bytes = nbytes;
        a->enc_len = b64_len(8 + nbytes);
        return 0;
    }
    const unsigned char *src = a->data;
    size_t nblocks = (nbytes + VTU_BLOCK - 1) / VTU_BLOCK;
    size_t last = nbytes % VTU_BLOCK;
    HK_CALL(hk_calloc(3 + nblocks, sizeof(uint64_t), &a->hdr));
    a->hdr[0] = nblocks, a->hdr[1] = VTU_BLOCK, a->hdr[2] = last;
    a->hdr_bytes = (3 + nblocks) * sizeof(uint64_t);
    /* blocks are independent: compress them in parallel into fixed slots, then pack them
     * (the file does not depend on the thread count) */
    const size_t slot = compressBound(VTU_BLOCK);
    size_t used = 0;
    int zfail = Z_OK;
    unsigned char *z = NULL;
    HK_TRY(hk_malloc(nblocks * slot + 1, &z));
#pragma omp parallel for schedule(dynamic, 4)
    for (size_t b = 0; b < nblocks; b++) {
        size_t len = (b + 1 < nblocks || !last) ? VTU_BLOCK : last;
        uLongf clen = (uLongf)slot;
        int zr =
            compress2(z + b * slot, &clen, src + b * (size_t)VTU_BLOCK, (uLong)len, VTU_ZLEVEL);
        a->hdr[3 + b] = clen;
        if (zr != Z_OK) {
#pragma omp critical(hk_vtu_zfail)
            zfail = zr;
        }
    }
    HK_TRY_CHECK(zfail == Z_OK, HK_ERR_INTERNAL, "zlib compress2 failed (%d) on array '%s'", zfail,
                 a->name);
    for (size_t b = 0; b < nblocks; b++) {
        memmove(z + used, z + b * slot, a->hdr[3 + b]);
        used += a->hdr[3 + b];
    }
    a->zbody = z, z = NULL;
    a->body_bytes = used;
    /* header and compressed blocks are encoded separately, as VTK reads them */
    a->enc_len = b64_len(a->hdr_bytes) + b64_len(used);
fail:
    free(z);
    return ierr;
}

/* Streaming base64 into the writer: bytes are fed in any pieces, text goes out in chunks. */
typedef struct {
    xmlTextWriterPtr w;
    unsigned char carry[3];
    int ncarry;
    char out[65536];
    size_t nout;
    int failed;
} b64_stream;

static void b64_flush(b64_stream *st)
{
    if (st->nout && !st->failed)
        st->failed = xmlTextWriterWriteRawLen(st->w, BAD_CAST st->out, (int)st->nout) < 0;
    st->nout = 0;
}

static void b64_feed(b64_stream *st, const unsigned char *p, size_t n)
{
    while (n > 0) {
        if (st->ncarry > 0 || n < 3) { /* complete a triplet byte by byte */
            st->carry[st->ncarry++] = *p++, n--;
            if (st->ncarry == 3) {
                st->nout += b64_encode(st->carry, 3, st->out + st->nout);
                st->ncarry = 0;
            }
        } else { /* whole triplets straight from the input, as many as fit */
            size_t room = (sizeof st->out - st->nout) / 4 * 3, take = n / 3 * 3;
            if (take > room) take = room;
            st->nout += b64_encode(p, take, st->out + st->nout);
            p += take, n -= take;
        }
        if (sizeof st->out - st->nout < 8) b64_flush(st);
    }
}

/* End one base64 stream: pad the last partial triplet. */
static void b64_end(b64_stream *st)
{
    if (st->ncarry) st->nout += b64_encode(st->carry, (size_t)st->ncarry, st->out + st->nout);
    st->ncarry = 0;
    b64_flush(st);
}

/* The base64 text of array a (lengths as prepare_array computed). */
static int write_appended(b64_stream *st, const vtu_array *a)
{
    b64_feed(st, (const unsigned char *)a->hdr, a->hdr_bytes);
    if (a->zbody) {
        b64_end(st);
        b64_feed(st, a->zbody, a->body_bytes);
    } else {
        b64_feed(st, a->data, a->body_bytes);
    }
    b64_end(st);
    return st->failed ? -1 : 0;
}

/* libxml2 returns -1 on failure: turn that into one sentence with the path. */
#define XW(call)                                                                                   \
    do {                                                                                           \
        if ((call) < 0) {                                                                          \
            ierr = hk_error_set(HK_ERR_IO, __FILE__, __LINE__,                                     \
                                "could not write '%s' (disk full or no permission?)", path);       \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* <DataArray ...> for a, with its offset in binary mode. */
static int write_array(xmlTextWriterPtr w, const char *path, const vtu_array *a, size_t offset)
{
    int ierr = 0;
    XW(xmlTextWriterStartElement(w, BAD_CAST "DataArray"));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "type", BAD_CAST a->type));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "Name", BAD_CAST a->name));
    XW(xmlTextWriterWriteFormatAttribute(w, BAD_CAST "NumberOfComponents", "%d", a->ncomp));
    if (a->comp_names)
        for (int c = 0; c < a->ncomp; c++) {
            char key[32];
            snprintf(key, sizeof key, "ComponentName%d", c);
            XW(xmlTextWriterWriteAttribute(w, BAD_CAST key, BAD_CAST a->comp_names[c]));
        }
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "format", BAD_CAST "appended"));
    XW(xmlTextWriterWriteFormatAttribute(w, BAD_CAST "offset", "%zu", offset));
    XW(xmlTextWriterEndElement(w));
fail:
    return ierr;
}

/* A text writer on path. The path is tried with stdio first so a bad path gives one
 * sentence with the system's reason instead of libxml2's messages on stderr. */
static int open_writer(const char *path, xmlTextWriterPtr *w)
{
    FILE *fp = fopen(path, "wb");
    HK_CHECK(fp, HK_ERR_IO, "could not open '%s' for writing: %s (does its folder exist?)", path,
             strerror(errno));
    fclose(fp);
    *w = xmlNewTextWriterFilename(path, 0);
    HK_CHECK(*w, HK_ERR_IO, "could not open '%s' for writing", path);
    return 0;
}

/* The indented document and its open <VTKFile type version byte_order> element, shared by the
 * .vtu and .pvd writers. */
static int start_vtkfile(xmlTextWriterPtr w, const char *path, const char *type,
                         const char *version)
{
    int ierr = 0;
    XW(xmlTextWriterSetIndent(w, 1));
    XW(xmlTextWriterSetIndentString(w, BAD_CAST "  "));
    XW(xmlTextWriterStartDocument(w, "1.0", "UTF-8", NULL));
    XW(xmlTextWriterStartElement(w, BAD_CAST "VTKFile"));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "type", BAD_CAST type));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "version", BAD_CAST version));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "byte_order", BAD_CAST "LittleEndian"));
fail:
    return ierr;
}

static const char *const tensor_names[6] = {"xx", "yy", "zz", "xy", "yz", "xz"};
/* axisymmetric: x = r, y = z, and the hoop direction theta (t) in the place of z */
static const char *const axi_names[6] = {"rr", "zz", "tt", "rz", "zt", "rt"};

int hk_vtu_write_libxml2(const char *path, const hk_mesh *m, const hk_fields *f, int compress)
{
    HK_CHECK(path && m, HK_ERR_ARG, "hk_vtu_write_libxml2: path or mesh is NULL");
    const int64_t nn = m->nnodes, ne = m->cells.n;
    if (f)
        HK_CHECK(f->nnodes == nn && f->ncells == ne, HK_ERR_ARG,
                 "hk_vtu_write '%s': the fields are for %lld nodes and %lld cells but the mesh has "
                 "%lld and %lld; pass the fields computed on this mesh",
                 path, (long long)f->nnodes, (long long)f->ncells, (long long)nn, (long long)ne);
    {
        const uint16_t one = 1;
        HK_CHECK(*(const uint8_t *)&one == 1, HK_ERR_UNSUPPORTED,
                 "hk_vtu_write_libxml2: big-endian hosts are not supported");
    }
    int ierr = 0;
    xmlTextWriterPtr w = NULL;
    int64_t *conn = NULL, *offs = NULL;
    uint8_t *types = NULL;
    b64_stream *stream = NULL;
    vtu_array arr[16];
    int narr = 0, npoint_first = 0, ncell_first = 0, ncells_arrays = 0;
    memset(arr, 0, sizeof arr);

    /* cells in VTK order */
    HK_TRY(
        hk_malloc((size_t)(m->cells.ptr[ne] > 0 ? m->cells.ptr[ne] : 1) * sizeof(int64_t), &conn));
    HK_TRY(hk_malloc((size_t)(ne > 0 ? ne : 1) * sizeof(int64_t), &offs));
    HK_TRY(hk_malloc((size_t)(ne > 0 ? ne : 1), &types));
    int64_t nconn = 0; /* connectivity entries so far (a pyr14 contributes 13) */
    for (int64_t e = 0; e < ne; e++) {
        /* element types, VTK numbers and node order: mesh's table (fem.h) */
        int t = m->cells.type[e];
        const hk_eltype_info *el = hk_eltype_get((hk_eltype)t);
        const int *order = hk_eltype_vtk_order((hk_eltype)t);
        int64_t b = m->cells.ptr[e], len = m->cells.ptr[e + 1] - b;
        const int nv = hk_eltype_vtk_nnodes((hk_eltype)t); /* pyr14: its first 13 nodes */
        HK_TRY_CHECK(el && order && el->dim >= 2 && len == el->nnodes, HK_ERR_UNSUPPORTED,
                     "hk_vtu_write '%s': element %lld is a %s with %lld nodes, which is not a "
                     "2D/3D cell the VTU writer knows",
                     path, (long long)(m->cells.tag ? m->cells.tag[e] : e + 1),
                     el ? el->name : "element of unknown type", (long long)len);
        for (int a = 0; a < nv; a++) {
            int32_t v = m->cells.nodes[b + order[a]];
            HK_TRY_CHECK(v >= 0 && v < nn, HK_ERR_MODEL,
                         "hk_vtu_write '%s': element %lld refers to node %d outside 0..%lld", path,
                         (long long)(m->cells.tag ? m->cells.tag[e] : e + 1), v, (long long)nn - 1);
            conn[nconn + a] = v;
        }
        nconn += nv;
        offs[e] = nconn;
        types[e] = (uint8_t)el->vtk_type;
    }

    /* the arrays, in the order they appear in the file */
#define ADD(nm, ty, nc, nt, wd, dp, cn)                                                            \
    arr[narr++] = (vtu_array){(nm), (ty), (nc), (nt), (wd), (dp), (cn), NULL, 0, NULL, 0, 0}
    ADD("Points", "Float64", 3, nn, 8, m->coords, NULL);
    ADD("connectivity", "Int64", 1, nconn, 8, conn, NULL);
    ADD("offsets", "Int64", 1, ne, 8, offs, NULL);
    ADD("types", "UInt8", 1, ne, 1, types, NULL);
    npoint_first = narr;
    const char *const *tn = f && f->axisymmetric ? axi_names : tensor_names;
    if (f) {
        if (f->u) ADD("displacement", "Float64", 3, nn, 8, f->u, NULL);
        if (f->stress) ADD("stress", "Float64", 6, nn, 8, f->stress, tn);
        if (f->strain) ADD("strain", "Float64", 6, nn, 8, f->strain, tn);
        if (f->von_mises) ADD("von_mises", "Float64", 1, nn, 8, f->von_mises, NULL);
        if (f->principal) ADD("principal_stress", "Float64", 3, nn, 8, f->principal, NULL);
        if (f->reaction) ADD("reaction", "Float64", 3, nn, 8, f->reaction, NULL);
    }
    ncell_first = narr;
    if (m->cell_region) ADD("region", "Int32", 1, ne, 4, m->cell_region, NULL);
    if (f) {
        if (f->cell_stress) ADD("element_stress", "Float64", 6, ne, 8, f->cell_stress, tn);
        if (f->cell_von_mises)
            ADD("element_von_mises", "Float64", 1, ne, 8, f->cell_von_mises, NULL);
    }
    ncells_arrays = narr - ncell_first;
#undef ADD
    size_t offsets[16] = {0};
    for (int k = 0; k < narr; k++) {
        HK_TRY(prepare_array(&arr[k], compress));
        if (k + 1 < narr) offsets[k + 1] = offsets[k] + arr[k].enc_len;
    }

    HK_TRY(hk_calloc(1, sizeof *stream, &stream));
    HK_TRY(open_writer(path, &w));
    HK_TRY(start_vtkfile(w, path, "UnstructuredGrid", "1.0"));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "header_type", BAD_CAST "UInt64"));
    if (compress)
        XW(xmlTextWriterWriteAttribute(w, BAD_CAST "compressor", BAD_CAST "vtkZLibDataCompressor"));
    XW(xmlTextWriterStartElement(w, BAD_CAST "UnstructuredGrid"));
    XW(xmlTextWriterStartElement(w, BAD_CAST "Piece"));
    XW(xmlTextWriterWriteFormatAttribute(w, BAD_CAST "NumberOfPoints", "%lld", (long long)nn));
    XW(xmlTextWriterWriteFormatAttribute(w, BAD_CAST "NumberOfCells", "%lld", (long long)ne));

    XW(xmlTextWriterStartElement(w, BAD_CAST "PointData"));
    if (f && f->von_mises)
        XW(xmlTextWriterWriteAttribute(w, BAD_CAST "Scalars", BAD_CAST "von_mises"));
    if (f && f->u) XW(xmlTextWriterWriteAttribute(w, BAD_CAST "Vectors", BAD_CAST "displacement"));
    for (int k = npoint_first; k < ncell_first; k++)
        HK_TRY(write_array(w, path, &arr[k], offsets[k]));
    XW(xmlTextWriterEndElement(w));

    XW(xmlTextWriterStartElement(w, BAD_CAST "CellData"));
    if (f && f->cell_von_mises)
        XW(xmlTextWriterWriteAttribute(w, BAD_CAST "Scalars", BAD_CAST "element_von_mises"));
    for (int k = ncell_first; k < ncell_first + ncells_arrays; k++)
        HK_TRY(write_array(w, path, &arr[k], offsets[k]));
    XW(xmlTextWriterEndElement(w));

    XW(xmlTextWriterStartElement(w, BAD_CAST "Points"));
    HK_TRY(write_array(w, path, &arr[0], offsets[0]));
    XW(xmlTextWriterEndElement(w));
    XW(xmlTextWriterStartElement(w, BAD_CAST "Cells"));
    for (int k = 1; k < 4; k++)
        HK_TRY(write_array(w, path, &arr[k], offsets[k]));
    XW(xmlTextWriterEndElement(w));

    XW(xmlTextWriterEndElement(w)); /* Piece */
    XW(xmlTextWriterEndElement(w)); /* UnstructuredGrid */
    XW(xmlTextWriterStartElement(w, BAD_CAST "AppendedData"));
    XW(xmlTextWriterWriteAttribute(w, BAD_CAST "encoding", BAD_CAST "base64"));
    XW(xmlTextWriterWriteRaw(w, BAD_CAST "_"));
    XW(xmlTextWriterFlush(w));
    for (int k = 0; k < narr; k++) {
        stream->w = w;
        XW(write_appended(stream, &arr[k]));
    }
    XW(xmlTextWriterWriteRaw(w, BAD_CAST "\n"));
    XW(xmlTextWriterEndElement(w));
    XW(xmlTextWriterEndElement(w)); /* VTKFile */
    XW(xmlTextWriterEndDocument(w));
    xmlFreeTextWriter(w); /* flushes and closes */
    w = NULL;

fail:
    if (w) {
        xmlFreeTextWriter(w);
        remove(path); /* no half-written file that ParaView would choke on */
    }
    for (int k = 0; k < narr; k++)
        free(arr[k].hdr), free(arr[k].zbody);
    free(stream);
    free(conn);
    free(offs);
    free(types);
    return ierr;
}
