/* hk_msh_check: what Hooke checks in a .msh before Gmsh reads it. Gmsh allocates from the
 * counts a file declares (a 200-byte file declaring 1e8 nodes took 1.6 GB and ended as "no 3D
 * elements") and answers a format it does not know with "could not read" or "the model has
 * dimension -1". Here: the format version (2.x or 4.x), and each $Nodes / $Elements count
 * against 2^31 and against the bytes the file has left to hold it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mesh_impl.h"

typedef struct msh_scan {
    const char *path;
    FILE *f;
    long long size;
    long line; /* number of the line last read, 1-based */
} msh_scan;

/* The next line (at most n - 1 bytes of it kept, the rest skipped); 0 at the end. */
static int next_line(msh_scan *s, char *buf, size_t n)
{
    if (!fgets(buf, (int)n, s->f)) return 0;
    s->line++;
    size_t len = strlen(buf);
    if (len && buf[len - 1] != '\n') {
        int c;
        while ((c = fgetc(s->f)) != EOF && c != '\n')
            ;
    }
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = 0;
    return 1;
}

/* A section's declared count against 2^31 and the bytes left after its header line. */
static int check_count(msh_scan *s, const char *section, const char *what, long long count,
                       int min_bytes)
{
    HK_CHECK(count >= 0 && count < INT32_MAX, HK_ERR_PARSE,
             "%s:%ld: the %s section declares %lld %s; Hooke reads meshes of fewer than 2^31 "
             "%s (a negative or huge count is a damaged file: export it again)",
             s->path, s->line, section, count, what, what);
    const long pos = ftell(s->f);
    const long long left = pos < 0 ? s->size : s->size - pos;
    HK_CHECK(count <= (left + 1) / min_bytes, HK_ERR_PARSE,
             "%s:%ld: the %s section declares %lld %s but the %lld bytes after it hold at most "
             "%lld; the file is truncated or the count is wrong (export it again)",
             s->path, s->line, section, count, what, left, (left + 1) / min_bytes);
    return 0;
}

int hk_msh_check(const char *path)
{
    int ierr = 0;
    char buf[256];
    struct stat st;
    msh_scan s = {.path = path};
    HK_CHECK(!stat(path, &st), HK_ERR_IO, "cannot open mesh file '%s': %s; check the path", path,
             strerror(errno));
    s.size = (long long)st.st_size;
    s.f = fopen(path, "rb");
    HK_CHECK(s.f, HK_ERR_IO, "cannot open mesh file '%s': %s; check the path", path,
             strerror(errno));
    int have = 0;
    while ((have = next_line(&s, buf, sizeof buf)) && !buf[strspn(buf, " \t")])
        ;
    if (have && !strncmp(buf, "$NOD", 4)) {
        ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "%s:%ld: this is Gmsh's mesh format 1, which Hooke does not read; "
                            "save it as format 2.2 or 4.1 (gmsh %s -save -format msh41 -o "
                            "NEW.msh)",
                            path, s.line, path);
        goto fail;
    }
    if (!have || strncmp(buf, "$MeshFormat", 11)) goto fail; /* hk_mesh_load's own message */
    double version = 0;
    int binary = -1, dsize = 0;
    HK_TRY_CHECK(next_line(&s, buf, sizeof buf) &&
                     sscanf(buf, "%lf %d %d", &version, &binary, &dsize) == 3,
                 HK_ERR_PARSE,
                 "%s:%ld: the line after $MeshFormat must read 'VERSION FILE-TYPE DATA-SIZE' "
                 "(e.g. '4.1 0 8'); export the mesh again",
                 path, s.line);
    HK_TRY_CHECK((version >= 2 && version < 3) || (version >= 4 && version < 5), HK_ERR_UNSUPPORTED,
                 "%s:%ld: this is Gmsh's mesh format %g, which Hooke does not read; save it as "
                 "format 2.2 or 4.1 (gmsh %s -save -format msh41 -o NEW.msh)",
                 path, s.line, version, path);
    HK_TRY_CHECK((binary == 0 || binary == 1) && (binary == 0 || dsize == (int)sizeof(size_t)),
                 HK_ERR_PARSE,
                 "%s:%ld: file type %d with data size %d: Gmsh writes 0 (text) or 1 (binary) with "
                 "data size 8; export the mesh again",
                 path, s.line, binary, dsize);
    const int v4 = version >= 4;
    /* the smallest record: a node "1 0 0 0\n" (v4: "1\n" and "0 0 0\n"), binary 28 or 32
     * bytes; an element "1 1\n" (v2 "1 15 0 1\n"), binary 12 or 16 */
    const int node_bytes = binary ? (v4 ? 32 : 28) : 8, elem_bytes = binary ? (v4 ? 16 : 12) : 4;
    while (next_line(&s, buf, sizeof buf)) {
        const int nodes = !strcmp(buf, "$Nodes"), elems = !strcmp(buf, "$Elements");
        if (!nodes && !elems) continue;
        const char *section = nodes ? "$Nodes" : "$Elements", *what = nodes ? "nodes" : "elements";
        long long count = -1;
        if (v4 && binary) { /* numEntityBlocks numNodes minTag maxTag, as size_t */
            size_t h[4];
            HK_TRY_CHECK(fread(h, sizeof *h, 4, s.f) == 4, HK_ERR_PARSE,
                         "%s:%ld: the file ends inside the %s header; it is truncated", path,
                         s.line, section);
            count = h[1] > (size_t)INT64_MAX ? -1 : (long long)h[1];
        } else {
            long long blocks = 0;
            HK_TRY_CHECK(next_line(&s, buf, sizeof buf) &&
                             sscanf(buf, v4 ? "%lld %lld" : "%lld", v4 ? &blocks : &count,
                                    &count) == (v4 ? 2 : 1),
                         HK_ERR_PARSE,
                         "%s:%ld: the line after %s must give the number of %s; the file is "
                         "damaged (export it again)",
                         path, s.line, section, what);
        }
        HK_TRY(check_count(&s, section, what, count, nodes ? node_bytes : elem_bytes));
        if (binary || elems) break; /* binary records follow, or nothing more to check */
    }
fail:
    fclose(s.f);
    return ierr;
}
