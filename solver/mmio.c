/* Matrix Market I/O (https://math.nist.gov/MatrixMarket/formats.html) and scalar -> block
 * grouping.
 *
 * Read: "matrix coordinate" with field real, integer or pattern (pattern values are 1) and
 * symmetry general or symmetric (symmetric files are expanded: each off-diagonal entry is
 * mirrored); "matrix array real general" one-column vectors. Complex, hermitian and
 * skew-symmetric are rejected. Duplicate entries are rejected (the message names both lines),
 * never summed silently. Every error is "FILE:LINE: what is wrong; what to do". */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "hk_impl.h"

/* ---- a line reader that counts lines ------------------------------------------------------ */

typedef struct mm_reader {
    const char *path;
    FILE *f;
    char *line;
    size_t cap;
    long lineno; /* number of the line in `line` (1-based) */
} mm_reader;

#define MM_ERR(rd, lno, ...) mm_error((rd)->path, (lno), __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 5, 6))) static int
mm_error(const char *path, long lineno, const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* quoted file text may hold control bytes (a stray \r) that would break the one line */
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return hk_error_set(HK_ERR_PARSE, file, line, "%s:%ld: %s", path, lineno, msg);
}

/* Next line into rd->line (newline stripped); 0 at end of file. */
static int mm_next(mm_reader *rd)
{
    ssize_t len = getline(&rd->line, &rd->cap, rd->f);
    if (len < 0) return 0;
    rd->lineno++;
    while (len > 0 && (rd->line[len - 1] == '\n' || rd->line[len - 1] == '\r'))
        rd->line[--len] = 0;
    return 1;
}

static int mm_blank(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == 0;
}

/* Next line that is neither a comment (%) nor blank; 0 at end of file. */
static int mm_next_data(mm_reader *rd)
{
    while (mm_next(rd)) {
        const char *s = rd->line;
        while (*s && isspace((unsigned char)*s))
            s++;
        if (*s && *s != '%') return 1;
    }
    return 0;
}

static int mm_open(mm_reader *rd, const char *path)
{
    memset(rd, 0, sizeof *rd);
    rd->path = path;
    struct stat st;
    HK_CHECK(stat(path, &st) || !S_ISDIR(st.st_mode), HK_ERR_IO,
             "%s is a folder, not a Matrix Market file; give the path of the .mtx file", path);
    rd->f = fopen(path, "r");
    HK_CHECK(rd->f, HK_ERR_IO, "cannot open Matrix Market file %s: %s; check the path", path,
             strerror(errno));
    return 0;
}

static void mm_close(mm_reader *rd)
{
    if (rd->f) fclose(rd->f);
    free(rd->line);
    rd->f = NULL;
    rd->line = NULL;
}

enum { MM_REAL, MM_INTEGER, MM_PATTERN };

/* Parse the banner "%%MatrixMarket matrix <layout> <field> <symmetry>" (case-insensitive). */
static int mm_banner(mm_reader *rd, const char *want_layout, int *field, int *symmetric)
{
    if (!mm_next(rd))
        return MM_ERR(rd, 1,
                      "the file is empty; a Matrix Market file starts with "
                      "'%%%%MatrixMarket matrix %s real general'",
                      want_layout);
    char w[5][64] = {{0}};
    int nw = sscanf(rd->line, "%63s %63s %63s %63s %63s", w[0], w[1], w[2], w[3], w[4]);
    if (nw < 5 || strcmp(w[0], "%%MatrixMarket") != 0 || strcasecmp(w[1], "matrix") != 0)
        return MM_ERR(rd, rd->lineno,
                      "bad banner '%.80s'; the first line must read "
                      "'%%%%MatrixMarket matrix %s <field> <symmetry>'",
                      rd->line, want_layout);
    if (strcasecmp(w[2], want_layout) != 0)
        return MM_ERR(rd, rd->lineno, "layout '%s' where '%s' is needed; %s", w[2], want_layout,
                      !strcmp(want_layout, "coordinate")
                          ? "store the matrix as sparse coordinate entries"
                          : "store the vector as a dense array (one value per line)");
    if (!strcasecmp(w[3], "real") || !strcasecmp(w[3], "double"))
        *field = MM_REAL;
    else if (!strcasecmp(w[3], "integer"))
        *field = MM_INTEGER;
    else if (!strcasecmp(w[3], "pattern") && !strcmp(want_layout, "coordinate"))
        *field = MM_PATTERN;
    else
        return MM_ERR(rd, rd->lineno, "field '%s' is not supported; use real, integer%s", w[3],
                      !strcmp(want_layout, "coordinate") ? " or pattern" : "");
    if (!strcasecmp(w[4], "general"))
        *symmetric = 0;
    else if (!strcasecmp(w[4], "symmetric") && !strcmp(want_layout, "coordinate"))
        *symmetric = 1;
    else
        return MM_ERR(rd, rd->lineno, "symmetry '%s' is not supported; use general%s", w[4],
                      !strcmp(want_layout, "coordinate") ? " or symmetric" : "");
    return 0;
}

/* Parse an integer token; *s advances. Returns 0 on success. */
static int mm_int(const char **s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(*s, &end, 10);
    if (end == *s || errno || (*end && !isspace((unsigned char)*end))) return 1;
    *s = end;
    return 0;
}

static int mm_real(const char **s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(*s, &end);
    if (end == *s || (*end && !isspace((unsigned char)*end))) return 1;
    *s = end;
    return 0;
}

/* the token at s, for messages */
static const char *mm_token(const char *s, char *buf, size_t n)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t k = 0;
    while (s[k] && !isspace((unsigned char)s[k]) && k + 1 < n)
        k++;
    memcpy(buf, s, k);
    buf[k] = 0;
    return buf;
}

static int mm_rest_blank(const char *s)
{
    return mm_blank(s);
}

/* ---- matrices ----------------------------------------------------------------------------- */

/* Bytes after the reader's position in a regular file; -1 for a pipe or another stream. */
static long long mm_bytes_left(mm_reader *rd)
{
    struct stat st;
    long pos = ftell(rd->f);
    if (pos < 0 || fstat(fileno(rd->f), &st) || !S_ISREG(st.st_mode)) return -1;
    return (long long)st.st_size - pos;
}

/* The file's declared count against what its remaining bytes can hold: an entry takes at
 * least min_bytes (its shortest text and a newline; the last may lack the newline). */
static int mm_check_count(mm_reader *rd, long long count, int min_bytes, const char *what)
{
    const long long left = mm_bytes_left(rd);
    if (left < 0 || count <= (left + 1) / min_bytes) return 0;
    return MM_ERR(rd, rd->lineno,
                  "the size line announces %lld %s but the %lld bytes after it hold at most "
                  "%lld (each takes at least %d bytes); the file is truncated or the size line "
                  "is wrong",
                  count, what, left, (left + 1) / min_bytes, min_bytes);
}

/* Refuse sizes whose arrays cannot fit in the memory left, before allocating them. */
static int mm_check_memory(mm_reader *rd, long line, double bytes, const char *what)
{
    const double avail = hk_host_memory_available();
    if (!(avail > 0) || bytes <= avail) return 0;
    char need[32], have[32];
    hk_format_bytes(need, sizeof need, bytes);
    hk_format_bytes(have, sizeof have, avail);
    return MM_ERR(rd, line,
                  "reading %s needs about %s of host memory but %s is available; check the "
                  "size line, or read the file on a machine with more memory",
                  what, need, have);
}

/* Entries in file order, grown as they arrive (the count is only a claim until the file
 * backs it); large blocks grow in place (mremap), so the peak is the final size. */
typedef struct mm_coo {
    int32_t *row, *col;
    double *val;
    int64_t n, cap, limit;
} mm_coo;

static int mm_coo_grow(mm_coo *c, const char *path)
{
    int64_t cap = c->cap ? 2 * c->cap : (int64_t)1 << 16;
    if (cap > c->limit) cap = c->limit;
    int32_t *row = realloc(c->row, (size_t)cap * sizeof *row);
    if (row) c->row = row;
    int32_t *col = row ? realloc(c->col, (size_t)cap * sizeof *col) : NULL;
    if (col) c->col = col;
    double *val = col ? realloc(c->val, (size_t)cap * sizeof *val) : NULL;
    if (val) c->val = val;
    HK_CHECK(val, HK_ERR_MEMORY, "out of host memory reading %s (%lld entries so far)", path,
             (long long)c->n);
    c->cap = cap;
    return 0;
}

static void mm_coo_free(mm_coo *c)
{
    free(c->row);
    free(c->col);
    free(c->val);
    memset(c, 0, sizeof *c);
}

/* Sort one row's columns with their values: insertion for short rows, heap sort for long. */
static void mm_sort_row(int32_t *col, double *val, int64_t n)
{
    if (n <= 32) {
        for (int64_t i = 1; i < n; i++) {
            const int32_t c = col[i];
            const double v = val[i];
            int64_t j = i - 1;
            for (; j >= 0 && col[j] > c; j--)
                col[j + 1] = col[j], val[j + 1] = val[j];
            col[j + 1] = c, val[j + 1] = v;
        }
        return;
    }
    for (int64_t end = n, start = n / 2;;) { /* heapify, then pop the largest to the end */
        if (start > 0)
            start--;
        else if (--end > 0) {
            int32_t c = col[0];
            double v = val[0];
            col[0] = col[end], val[0] = val[end], col[end] = c, val[end] = v;
        } else
            break;
        for (int64_t root = start, child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && col[child + 1] > col[child]) child++;
            if (col[root] >= col[child]) break;
            int32_t c = col[root];
            double v = val[root];
            col[root] = col[child], val[root] = val[child], col[child] = c, val[child] = v;
        }
    }
}

/* The two lines of the file that give entry (i, j) (or, symmetric, (j, i)), 1-based: read
 * again from the start, since the one pass keeps no line numbers. */
static void mm_find_duplicate(mm_reader *rd, long long i, long long j, int sym, long *l0, long *l1)
{
    *l0 = *l1 = 0;
    rewind(rd->f);
    rd->lineno = 0;
    if (!mm_next(rd) || !mm_next_data(rd)) return; /* banner, size line */
    while (mm_next_data(rd)) {
        long long a, b;
        const char *s = rd->line;
        if (mm_int(&s, &a) || mm_int(&s, &b)) continue;
        if (!((a == i && b == j) || (sym && a == j && b == i))) continue;
        if (!*l0)
            *l0 = rd->lineno;
        else {
            *l1 = rd->lineno;
            return;
        }
    }
}

int hk_mm_read_matrix(const char *path, hk_bcsr *A)
{
    int ierr = 0;
    mm_reader rd;
    mm_coo e = {0};
    int32_t *placed = NULL;
    char tok[64];
    memset(A, 0, sizeof *A);
    HK_CALL(mm_open(&rd, path));
    int field, sym;
    HK_TRY(mm_banner(&rd, "coordinate", &field, &sym));

    /* size line: rows cols entries */
    HK_TRY_CHECK(mm_next_data(&rd), HK_ERR_PARSE,
                 "%s:%ld: the file ends before the size line; add 'ROWS COLUMNS ENTRIES' after "
                 "the banner and comments",
                 path, rd.lineno + 1);
    long long M, N, NZ;
    const char *s = rd.line;
    if (mm_int(&s, &M) || mm_int(&s, &N) || mm_int(&s, &NZ) || !mm_rest_blank(s) || M < 0 ||
        N < 0 || NZ < 0) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "bad size line '%.80s'; it must hold three non-negative integers "
                      "'ROWS COLUMNS ENTRIES'",
                      rd.line);
        goto fail;
    }
    const long size_line = rd.lineno;
    if (M >= INT32_MAX || N >= INT32_MAX || (M && N && NZ > M * N) || (!(M && N) && NZ)) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "sizes %lld x %lld with %lld entries are out of range (at most 2^31-1 "
                      "rows/columns and ROWS*COLUMNS entries); fix the size line",
                      M, N, NZ);
        goto fail;
    }
    if (sym && M != N) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "a symmetric matrix must be square but the size line says %lld x %lld; "
                      "fix the sizes or declare the matrix general",
                      M, N);
        goto fail;
    }
    /* what the file can hold, then what memory can: before anything is allocated */
    HK_TRY(mm_check_count(&rd, NZ, field == MM_PATTERN ? 4 : 6, "entries"));
    const long long stored = sym ? 2 * NZ : NZ; /* off-diagonal entries of a symmetric file twice */
    char what[128];
    snprintf(what, sizeof what, "the %lld x %lld matrix with %lld entries", M, N, NZ);
    HK_TRY(mm_check_memory(&rd, size_line, 16.0 * (double)stored, what)); /* row, column, value */

    /* one pass: the entries in file order, straight into the arrays that become the CSR */
    e.limit = stored > 0 ? stored : 1;
    for (long long k = 0; k < NZ; k++) {
        if (!mm_next_data(&rd)) {
            ierr = MM_ERR(&rd, rd.lineno + 1,
                          "the file ends after %lld of the %lld entries announced on line %ld; "
                          "the file is truncated or the entry count is wrong",
                          k, NZ, size_line);
            goto fail;
        }
        long long i, j;
        double v = 1.0;
        s = rd.line;
        if (mm_int(&s, &i) || mm_int(&s, &j)) {
            ierr = MM_ERR(&rd, rd.lineno,
                          "expected 'ROW COLUMN%s' with integer indices, found '%.80s'; fix "
                          "the entry",
                          field == MM_PATTERN ? "" : " VALUE", rd.line);
            goto fail;
        }
        if (i < 1 || i > M || j < 1 || j > N) {
            ierr = MM_ERR(&rd, rd.lineno,
                          "index (%lld, %lld) is outside the %lld x %lld matrix (indices are "
                          "1-based); fix the entry or the size line (line %ld)",
                          i, j, M, N, size_line);
            goto fail;
        }
        if (field != MM_PATTERN) {
            if (mm_blank(s)) {
                ierr = MM_ERR(&rd, rd.lineno,
                              "entry (%lld, %lld) has no value; write 'ROW COLUMN VALUE' (or "
                              "declare the matrix pattern)",
                              i, j);
                goto fail;
            }
            long long iv;
            const char *s0 = s;
            int bad = field == MM_INTEGER ? mm_int(&s, &iv) : mm_real(&s, &v);
            if (field == MM_INTEGER && !bad) v = (double)iv;
            if (bad || !isfinite(v)) {
                ierr = MM_ERR(&rd, rd.lineno,
                              "value '%s' of entry (%lld, %lld) is not a%s; "
                              "fix the value",
                              mm_token(s0, tok, sizeof tok), i, j,
                              field == MM_INTEGER ? "n integer" : " finite real number");
                goto fail;
            }
        }
        if (!mm_rest_blank(s)) {
            ierr = MM_ERR(&rd, rd.lineno,
                          "unexpected text '%s' after entry (%lld, %lld); one entry per line",
                          mm_token(s, tok, sizeof tok), i, j);
            goto fail;
        }
        const int mirror = sym && i != j;
        if (e.n + 1 + mirror > e.cap) HK_TRY(mm_coo_grow(&e, path));
        e.row[e.n] = (int32_t)(i - 1), e.col[e.n] = (int32_t)(j - 1), e.val[e.n++] = v;
        if (mirror) e.row[e.n] = (int32_t)(j - 1), e.col[e.n] = (int32_t)(i - 1), e.val[e.n++] = v;
    }
    if (mm_next_data(&rd)) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "more entries than the %lld announced on line %ld; fix the entry count", NZ,
                      size_line);
        goto fail;
    }

    /* the row pointers from the size line: only now, the entries being there */
    /* more rows than entries: empty rows, a singular system, and row pointers that the file
     * does not pay for (a 60-byte file declaring 2e9 rows) */
    if (M > e.n) {
        ierr = MM_ERR(&rd, size_line,
                      "the %lld x %lld matrix has %lld entries, so at least %lld of its rows "
                      "are empty%s; fix the size line",
                      M, N, (long long)e.n, M - (long long)e.n,
                      M == N ? " and it is singular"
                             : " (Hooke reads matrices with an entry in every row)");
        goto fail;
    }

    /* rows in place: count, then move each entry into its row's next free slot (every move
     * settles one entry for good); then the columns of each row in order */
    const int64_t ne = e.n;
    A->bs = 1;
    A->nbrows = M;
    A->nbcols = N;
    HK_TRY(hk_calloc((size_t)M + 1, sizeof *A->rowptr, &A->rowptr));
    HK_TRY(hk_calloc((size_t)(M ? M : 1), sizeof *placed, &placed));
    for (int64_t k = 0; k < ne; k++)
        A->rowptr[e.row[k] + 1]++;
    for (int64_t r = 0; r < M; r++)
        A->rowptr[r + 1] += A->rowptr[r];
    for (int64_t r = 0; r < M; r++)
        for (int64_t p = A->rowptr[r] + placed[r]; p < A->rowptr[r + 1];
             p = A->rowptr[r] + placed[r]) {
            const int32_t to = e.row[p];
            if (to == r) {
                placed[r]++;
                continue;
            }
            const int64_t q = A->rowptr[to] + placed[to]++;
            const int32_t c = e.col[p];
            const double v = e.val[p];
            e.row[p] = e.row[q], e.col[p] = e.col[q], e.val[p] = e.val[q];
            e.row[q] = to, e.col[q] = c, e.val[q] = v;
        }
    free(placed);
    placed = NULL;
    free(e.row);
    e.row = NULL;
    A->colind = e.col;
    A->val = e.val;
    e.col = NULL;
    e.val = NULL;
    for (int64_t r = 0; r < M; r++) {
        const int64_t p0 = A->rowptr[r], len = A->rowptr[r + 1] - p0;
        mm_sort_row(A->colind + p0, A->val + p0, len);
        for (int64_t k = 1; k < len; k++)
            if (A->colind[p0 + k] == A->colind[p0 + k - 1]) {
                long l0, l1;
                const long long i = r + 1, j = (long long)A->colind[p0 + k] + 1;
                mm_find_duplicate(&rd, i, j, sym, &l0, &l1);
                ierr = MM_ERR(&rd, l1,
                              "entry (%lld, %lld) is given again (first on line %ld%s); Hooke "
                              "does not sum duplicates: merge them into one entry",
                              i, j, l0, sym ? ", a symmetric file stores each pair once" : "");
                goto fail;
            }
    }
    mm_close(&rd);
    return 0;
fail:
    free(placed);
    mm_coo_free(&e);
    mm_close(&rd);
    hk_bcsr_free(A);
    return ierr;
}

int hk_mm_write_matrix(const char *path, const hk_bcsr *A)
{
    const int bs = A->bs;
    FILE *f = fopen(path, "w");
    HK_CHECK(f, HK_ERR_IO, "cannot write Matrix Market file %s: %s; check the directory", path,
             strerror(errno));
    const int64_t nnz = A->rowptr[A->nbrows] * bs * bs;
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
    fprintf(f, "%% written by Hooke from a %dx%d block CSR matrix\n", bs, bs);
    fprintf(f, "%lld %lld %lld\n", (long long)(A->nbrows * bs), (long long)(A->nbcols * bs),
            (long long)nnz);
    for (int64_t bi = 0; bi < A->nbrows; bi++)
        for (int r = 0; r < bs; r++)
            for (int64_t k = A->rowptr[bi]; k < A->rowptr[bi + 1]; k++)
                for (int c = 0; c < bs; c++)
                    fprintf(f, "%lld %lld %.17g\n", (long long)(bi * bs + r + 1),
                            (long long)A->colind[k] * bs + c + 1,
                            A->val[((size_t)k * bs + r) * bs + c]);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    HK_CHECK(!bad, HK_ERR_IO, "writing Matrix Market file %s failed (disk full?)", path);
    return 0;
}

/* ---- vectors ------------------------------------------------------------------------------ */

/* A dense array file: M x N values, column after column as the format stores them, into a new
 * array *x in that order. vector = 1 requires N = 1 (the messages then speak of a vector). */
static int mm_read_dense(const char *path, int vector, int64_t *rows, int64_t *cols, double **x)
{
    int ierr = 0;
    mm_reader rd;
    double *v = NULL;
    char tok[64];
    *rows = *cols = 0;
    *x = NULL;
    HK_CALL(mm_open(&rd, path));
    int field, sym;
    HK_TRY(mm_banner(&rd, "array", &field, &sym));
    HK_TRY_CHECK(mm_next_data(&rd), HK_ERR_PARSE,
                 "%s:%ld: the file ends before the size line; add '%s' after the banner", path,
                 rd.lineno + 1, vector ? "ROWS 1" : "ROWS COLUMNS");
    long long M, N;
    const char *s = rd.line;
    if (mm_int(&s, &M) || mm_int(&s, &N) || !mm_rest_blank(s) || M < 0 || N < 0) {
        ierr = MM_ERR(&rd, rd.lineno, "bad size line '%.80s'; %s size line is '%s'", rd.line,
                      vector ? "a vector's" : "an array's", vector ? "ROWS 1" : "ROWS COLUMNS");
        goto fail;
    }
    const long size_line = rd.lineno;
    if (vector && N != 1) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "the array has %lld columns; a vector must have exactly one column", N);
        goto fail;
    }
    if (M >= INT32_MAX || N > 64 || M * N >= INT32_MAX) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "%lld x %lld is out of range (at most 2^31-1 values, 64 columns); fix the "
                      "size line",
                      M, N);
        goto fail;
    }
    const long long total = M * N;
    HK_TRY(mm_check_count(&rd, total, 2, "values"));
    {
        char what[96];
        snprintf(what, sizeof what, "the %lld x %lld array", M, N);
        HK_TRY(mm_check_memory(&rd, rd.lineno, 8.0 * (double)total * (vector ? 1 : 2), what));
    }
    /* grow as values arrive, so that a wrong size in a truncated file is reported as such
     * rather than as a failed allocation */
    long long cap = total < (1 << 16) ? (total ? total : 1) : (1 << 16);
    HK_TRY(hk_malloc((size_t)cap * sizeof *v, &v));
    for (long long k = 0; k < total; k++) {
        if (k == cap) {
            cap = 2 * cap < total ? 2 * cap : total;
            double *grown = realloc(v, (size_t)cap * sizeof *v);
            HK_TRY_CHECK(grown, HK_ERR_MEMORY, "out of host memory reading %s (%lld values so far)",
                         path, k);
            v = grown;
        }
        if (!mm_next_data(&rd)) {
            ierr = MM_ERR(&rd, rd.lineno + 1,
                          "the file ends after %lld of the %lld values announced on line %ld; "
                          "the file is truncated or the size is wrong",
                          k, total, size_line);
            goto fail;
        }
        s = rd.line;
        while (*s && isspace((unsigned char)*s))
            s++;
        long long iv;
        const char *s0 = s;
        int bad = field == MM_INTEGER ? mm_int(&s, &iv) : mm_real(&s, &v[k]);
        if (field == MM_INTEGER && !bad) v[k] = (double)iv;
        if (bad || !isfinite(v[k]) || !mm_rest_blank(s)) {
            char where[64];
            if (vector)
                snprintf(where, sizeof where, "value %lld", k + 1);
            else
                snprintf(where, sizeof where, "value %lld (row %lld, column %lld)", k + 1,
                         M ? k % M + 1 : 0, M ? k / M + 1 : 0);
            ierr = MM_ERR(&rd, rd.lineno,
                          "%s '%s' is not a%s (one value per line, column after column); fix "
                          "the value",
                          where, bad || !isfinite(v[k]) ? mm_token(s0, tok, sizeof tok) : rd.line,
                          field == MM_INTEGER ? "n integer" : " finite real number");
            goto fail;
        }
    }
    if (mm_next_data(&rd)) {
        ierr = MM_ERR(&rd, rd.lineno,
                      "more values than the %lld announced on line %ld; fix the size line", total,
                      size_line);
        goto fail;
    }
    mm_close(&rd);
    *rows = M;
    *cols = N;
    *x = v;
    return 0;
fail:
    free(v);
    mm_close(&rd);
    return ierr;
}

int hk_mm_read_vector(const char *path, int64_t *n, double **x)
{
    int64_t cols;
    return mm_read_dense(path, 1, n, &cols, x);
}

int hk_mm_read_array(const char *path, int64_t *rows, int *cols, double **x)
{
    int64_t M, N;
    double *cm = NULL, *rm = NULL;
    *rows = 0;
    *cols = 0;
    *x = NULL;
    HK_CALL(mm_read_dense(path, 0, &M, &N, &cm));
    int ierr = hk_malloc((size_t)(M * N > 0 ? M * N : 1) * sizeof *rm, &rm);
    if (ierr) {
        free(cm);
        return ierr;
    }
    for (int64_t i = 0; i < M; i++) /* column-major in the file, row after row here */
        for (int64_t j = 0; j < N; j++)
            rm[i * N + j] = cm[j * M + i];
    free(cm);
    *rows = M;
    *cols = (int)N;
    *x = rm;
    return 0;
}

int hk_mm_write_vector(const char *path, int64_t n, const double *x)
{
    FILE *f = fopen(path, "w");
    HK_CHECK(f, HK_ERR_IO, "cannot write Matrix Market file %s: %s; check the directory", path,
             strerror(errno));
    fprintf(f, "%%%%MatrixMarket matrix array real general\n%lld 1\n", (long long)n);
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "%.17g\n", x[i]);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    HK_CHECK(!bad, HK_ERR_IO, "writing Matrix Market file %s failed (disk full?)", path);
    return 0;
}

/* ---- scalar -> blocks --------------------------------------------------------------------- */

int hk_bcsr_to_blocks(const hk_bcsr *A, int bs, hk_bcsr *B)
{
    int ierr = 0;
    int64_t *mark = NULL;
    memset(B, 0, sizeof *B);
    HK_CHECK(bs >= 1 && bs <= 6, HK_ERR_ARG, "block size %d is not supported; use 1 to 6", bs);
    if (A->bs == bs) return hk_bcsr_copy(A, B);
    HK_CHECK(A->bs == 1, HK_ERR_ARG,
             "cannot regroup a %dx%d block matrix into %dx%d blocks; start from the scalar "
             "matrix",
             A->bs, A->bs, bs, bs);
    HK_CHECK(A->nbrows % bs == 0 && A->nbcols % bs == 0, HK_ERR_ARG,
             "a %lld x %lld matrix cannot be cut into %dx%d blocks; its size must be a "
             "multiple of %d (wrong block size for this problem?)",
             (long long)A->nbrows, (long long)A->nbcols, bs, bs, bs);
    const int64_t nbr = A->nbrows / bs, nbc = A->nbcols / bs;
    const size_t b2 = (size_t)bs * bs;
    B->bs = bs;
    B->nbrows = nbr;
    B->nbcols = nbc;
    HK_TRY(hk_malloc((size_t)(nbc ? nbc : 1) * sizeof *mark, &mark));
    for (int64_t j = 0; j < nbc; j++)
        mark[j] = -1;
    HK_TRY(hk_calloc((size_t)nbr + 1, sizeof *B->rowptr, &B->rowptr));
    /* pass 1: count distinct block columns per block row */
    for (int64_t I = 0; I < nbr; I++) {
        int64_t cnt = 0;
        for (int64_t r = I * bs; r < (I + 1) * bs; r++)
            for (int64_t k = A->rowptr[r]; k < A->rowptr[r + 1]; k++) {
                const int64_t J = A->colind[k] / bs;
                if (mark[J] != I) mark[J] = I, cnt++;
            }
        B->rowptr[I + 1] = B->rowptr[I] + cnt;
    }
    const int64_t nnzb = B->rowptr[nbr];
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *B->colind, &B->colind));
    HK_TRY(hk_calloc((size_t)(nnzb ? nnzb : 1) * b2, sizeof *B->val, &B->val));
    for (int64_t j = 0; j < nbc; j++)
        mark[j] = -1;
    /* pass 2: block columns (sorted), then values through mark[J] = slot */
    for (int64_t I = 0; I < nbr; I++) {
        int64_t p = B->rowptr[I];
        for (int64_t r = I * bs; r < (I + 1) * bs; r++)
            for (int64_t k = A->rowptr[r]; k < A->rowptr[r + 1]; k++) {
                const int64_t J = A->colind[k] / bs;
                if (mark[J] < B->rowptr[I]) mark[J] = p, B->colind[p++] = (int32_t)J;
            }
        hk_isort_i32(B->colind + B->rowptr[I], p - B->rowptr[I]); /* rows are short */
        for (int64_t q = B->rowptr[I]; q < p; q++)
            mark[B->colind[q]] = q;
        for (int64_t r = I * bs; r < (I + 1) * bs; r++)
            for (int64_t k = A->rowptr[r]; k < A->rowptr[r + 1]; k++) {
                const int64_t J = A->colind[k] / bs;
                B->val[((size_t)mark[J] * bs + (size_t)(r - I * bs)) * bs +
                       (size_t)(A->colind[k] % bs)] += A->val[k];
            }
    }
    free(mark);
    return 0;
fail:
    free(mark);
    hk_bcsr_free(B);
    return ierr;
}
