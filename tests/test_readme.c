/* The README's examples run as written: every line of its code blocks that starts with
 * `hooke ` is run with the built binary (an example once failed on the bracket because the
 * case's pc did not take the option it set). To stay quick, `hooke run` gets
 * --set geometry.order=1 after its own options and --generate sizes are capped at 10; A.mtx
 * (K.mtx) and b.mtx are a small 3D elasticity system made here, M.mtx an identity mass
 * matrix; /tmp/ is the test's folder. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test_util.h"
#include "hk_impl.h"

/* The README's `hooke ...` lines, comments cut; returns how many (at most max). */
static int readme_commands(char lines[][512], int max)
{
    FILE *f = fopen(hk_test_path("README.md"), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char buf[1024];
    int in_block = 0, n = 0;
    while (fgets(buf, sizeof buf, f)) {
        if (!strncmp(buf, "```", 3)) {
            in_block = !in_block;
            continue;
        }
        if (!in_block || strncmp(buf, "hooke ", 6) || n == max) continue;
        char *hash = strstr(buf, " #"); /* a comment after the command */
        if (hash) *hash = 0;
        size_t len = strlen(buf);
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
            buf[--len] = 0;
        snprintf(lines[n++], sizeof lines[0], "%s", buf);
    }
    fclose(f);
    return n;
}

/* line with the quick-run changes (see the top), the binary's path and /tmp/ -> dir */
static void rewrite(const char *line, const char *dir, char *out, size_t n)
{
    char tmp[1024];
    size_t k = 0;
    k += (size_t)snprintf(tmp, sizeof tmp, "'%s'", HOOKE_BINARY);
    for (const char *p = line + 5; *p && k + 64 < sizeof tmp;) {
        if (!strncmp(p, "/tmp/", 5)) {
            k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s/", dir);
            p += 5;
        } else if (!strncmp(p, "--generate ", 11)) {
            const char *colon = strchr(p, ':');
            long N = colon ? strtol(colon + 1, NULL, 10) : 0;
            k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%.*s%ld", (int)(colon + 1 - p), p,
                                  N > 10 ? 10 : N);
            p = colon + 1;
            while (*p >= '0' && *p <= '9')
                p++;
        } else
            tmp[k++] = *p++;
    }
    tmp[k] = 0;
    if (!strncmp(line, "hooke run ", 10)) {
        /* the extra option goes before a redirection, if any */
        char *redir = strchr(tmp, '>');
        char rest[256] = "";
        if (redir) snprintf(rest, sizeof rest, " %s", redir), *redir = 0;
        snprintf(out, n, "%s --set geometry.order=1%s", tmp, rest);
    } else
        snprintf(out, n, "%s", tmp);
}

static void write_system(const char *dir)
{
    hk_bcsr K;
    char path[700];
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 3, &K));
    snprintf(path, sizeof path, "%s/A.mtx", dir);
    HK_ASSERT_OK(hk_mm_write_matrix(path, &K));
    snprintf(path, sizeof path, "%s/K.mtx", dir);
    HK_ASSERT_OK(hk_mm_write_matrix(path, &K));
    /* a lumped mass matrix for the eigenvalue example: the identity in K's blocks */
    hk_bcsr M = {.bs = K.bs, .nbrows = K.nbrows, .nbcols = K.nbcols};
    HK_ASSERT_OK(hk_calloc((size_t)K.nbrows + 1, sizeof *M.rowptr, &M.rowptr));
    HK_ASSERT_OK(hk_malloc((size_t)K.nbrows * sizeof *M.colind, &M.colind));
    HK_ASSERT_OK(hk_calloc((size_t)K.nbrows * K.bs * K.bs, sizeof *M.val, &M.val));
    for (int64_t i = 0; i < K.nbrows; i++) {
        M.rowptr[i + 1] = i + 1;
        M.colind[i] = (int32_t)i;
        for (int r = 0; r < K.bs; r++)
            M.val[((size_t)i * K.bs + r) * K.bs + r] = 1;
    }
    snprintf(path, sizeof path, "%s/M.mtx", dir);
    HK_ASSERT_OK(hk_mm_write_matrix(path, &M));
    hk_bcsr_free(&M);
    const int64_t n = K.nbrows * K.bs;
    double *b = hk_test_rand_vec(n, 7);
    snprintf(path, sizeof path, "%s/b.mtx", dir);
    HK_ASSERT_OK(hk_mm_write_vector(path, n, b));
    free(b);
    hk_bcsr_free(&K);
}

static void test_readme_commands(void)
{
    static char lines[64][512];
    const int n = readme_commands(lines, 64);
    CU_ASSERT(n >= 10); /* the tour's examples are found */
    char dir[512], cmd[3000];
    snprintf(dir, sizeof dir, "%s/readme", hk_test_tmpdir());
    mkdir(dir, 0777);
    /* a copy of cases/: runs write their .vtu next to the case file */
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s/'", hk_test_path("cases"), dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    write_system(dir);
    const int cuda = hk_test_have_cuda();
    static char out[1 << 16];
    for (int i = 0; i < n; i++) {
        char run[1200];
        rewrite(lines[i], dir, run, sizeof run);
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 timeout 300 sh -c \"%s\"", run);
        const int rc = hk_test_shell(dir, cmd, out, sizeof out);
        if (strstr(lines[i], "--backend cuda") && !cuda) {
            /* without a GPU the CUDA examples must say so and stop */
            const int says = rc != 0 && (strstr(out, "CUDA") || strstr(out, "cuda"));
            if (!says) fprintf(stderr, "\n  %s (no GPU): rc %d\n%s\n", lines[i], rc, out);
            CU_ASSERT(says);
            continue;
        }
        if (getenv("HOOKE_TEST_VERBOSE")) fprintf(stderr, "\n  %s: rc %d\n", run, rc);
        if (rc)
            fprintf(stderr, "\n  README example failed (rc %d): %s\n  ran: %s\n%s\n", rc, lines[i],
                    run, out);
        CU_ASSERT_EQUAL(rc, 0);
    }
    /* the JSON example's file is JSON with the result */
    char path[600];
    snprintf(path, sizeof path, "%s/lame.json", dir);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t len = fread(out, 1, sizeof out - 1, f);
    out[len] = 0;
    fclose(f);
    CU_ASSERT(out[0] == '{' && strstr(out, "\"ok\": true") && !strstr(out, "Info"));
}

HK_SUITE(readme, {"every hooke command in README.md runs as written", test_readme_commands})
