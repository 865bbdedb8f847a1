/* Every `hooke solve --generate` line in the fenced blocks of docs/solver.md runs and
 * converges on every usable backend: the documented option combinations are the ones that
 * work. A line's options are passed as `hooke solve` passes them (b = K times ones, the
 * generated grid's coordinates as the near-null space); a trailing comment may restrict it:
 * `# cuda` (a device backend only), `# cholmod` (built with CHOLMOD only) or `# amd` (built with
 * SuiteSparse's AMD only). Lines with other
 * command options (--eigen, --rhs, ...) or without a KIND:N are not solver combinations. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "test_util.h"

#define DOC_MAX_LINES 400

typedef struct doc_line {
    int lineno;
    char spec[64];
    char opts[512];
    int cuda_only, cholmod_only, amd_only;
} doc_line;

/* The solver lines of the fenced blocks of path; returns their number (-1: no file). */
static int doc_lines(const char *path, doc_line *out, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[1024];
    int n = 0, lineno = 0, fence = 0;
    while (fgets(buf, sizeof buf, f)) {
        lineno++;
        if (!strncmp(buf, "```", 3)) {
            fence = !fence;
            continue;
        }
        if (!fence) continue;
        char *s = buf;
        if (!strncmp(s, "$ ", 2)) s += 2;
        if (strncmp(s, "hooke solve --generate ", 23)) continue;
        s += 23;
        doc_line d = {.lineno = lineno};
        char *hash = strchr(s, '#');
        if (hash) {
            d.cuda_only = strstr(hash, "cuda") != NULL;
            d.cholmod_only = strstr(hash, "cholmod") != NULL;
            d.amd_only = strstr(hash, "amd") != NULL;
            *hash = 0;
        }
        char *tok = strtok(s, " \t\r\n");
        const char *colon = tok ? strchr(tok, ':') : NULL;
        if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1)) continue;
        snprintf(d.spec, sizeof d.spec, "%s", tok);
        int other = 0;
        size_t len = 0;
        while ((tok = strtok(NULL, " \t\r\n"))) {
            if (tok[0] == '-') other = 1;
            const int w = snprintf(d.opts + len, sizeof d.opts - len, " %s", tok);
            if (w > 0 && (size_t)w < sizeof d.opts - len) len += (size_t)w;
        }
        if (other || n == cap) continue;
        out[n++] = d;
    }
    fclose(f);
    return n;
}

static void test_solver_md(void)
{
    static doc_line lines[DOC_MAX_LINES];
    const int n = doc_lines(hk_test_path("docs/solver.md"), lines, DOC_MAX_LINES);
    CU_ASSERT_FATAL(n >= 40); /* the block of documented combinations is there */
#ifdef HOOKE_HAVE_CHOLMOD
    const int cholmod = 1;
#else
    const int cholmod = 0;
#endif
#ifdef HOOKE_HAVE_AMD
    const int amd = 1;
#else
    const int amd = 0;
#endif
    const hk_backend *const *bes = hk_test_backends();
    int ran = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        const doc_line *d = &lines[i];
        if ((d->cholmod_only && !cholmod) || (d->amd_only && !amd)) continue;
        hk_bcsr K = {0};
        double *coords = NULL;
        int dim = 0;
        if (hk_app_generate(d->spec, "docs/solver.md", &K, &coords, &dim)) {
            printf("\n    docs/solver.md:%d: --generate %s failed", d->lineno, d->spec);
            failed++;
            continue;
        }
        for (int b = 0; bes[b]; b++) {
            const char *bn = hk_backend_name(bes[b]);
            if (d->cuda_only && !strcmp(bn, "cpu")) continue;
            char text[640];
            snprintf(text, sizeof text, "backend=%s%s", bn, d->opts);
            hk_options *o = NULL;
            hk_solver *s = NULL;
            hk_result res = {0};
            const int64_t nd = K.nbrows * K.bs;
            double *x = calloc((size_t)nd, sizeof *x), *rhs = calloc((size_t)nd, sizeof *rhs);
            const hk_nearnull nn = {.dim = dim, .coords = coords};
            int err = !x || !rhs ? HK_ERR_MEMORY : hk_options_create(&o);
            for (int64_t r = 0; !err && r < K.nbrows; r++)
                for (int64_t q = K.rowptr[r]; q < K.rowptr[r + 1]; q++)
                    for (int a = 0; a < K.bs; a++)
                        for (int c = 0; c < K.bs; c++)
                            rhs[r * K.bs + a] += K.val[(q * K.bs + a) * K.bs + c];
            if (!err) err = hk_options_parse(o, text);
            if (!err) err = hk_solver_create_nearnull(&K, coords ? &nn : NULL, o, &s);
            if (!err) err = hk_solver_solve(s, rhs, x, &res);
            ran++;
            if (err || !hk_reason_converged(res.reason)) {
                failed++;
                printf("\n    docs/solver.md:%d on %s: hooke solve --generate %s%s: %s", d->lineno,
                       bn, d->spec, d->opts, err ? hk_error_message() : hk_reason_name(res.reason));
            }
            hk_error_clear();
            hk_solver_destroy(s);
            hk_options_destroy(o);
            free(x);
            free(rhs);
        }
        free(coords);
        hk_bcsr_free(&K);
    }
    printf("\n    %d documented lines, %d solves, %d failed", n, ran, failed);
    CU_ASSERT_EQUAL(failed, 0);
}

HK_SUITE(doc_options, {"every hooke solve --generate line of docs/solver.md converges on every "
                       "backend",
                       test_solver_md})
