/* Helpers shared by the test suites that need the application layer (case files). */
#include <stdio.h>

#include "case.h"
#include "test_util.h"

int hk_test_run_case(const char *rel, int nsets, const char *const *sets, hk_case *c, hk_run *r)
{
    int err = hk_case_load(rel[0] == '/' ? rel : hk_test_path(rel), nsets, sets, c);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", rel, hk_error_message());
        return err;
    }
    hk_run_opts o = {.backend = "cpu", .quiet = 1};
    err = hk_run_case(c, &o, r);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", rel, hk_error_message());
        hk_run_free(r);
        hk_case_free(c);
    }
    return err;
}
