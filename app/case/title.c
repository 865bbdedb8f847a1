/* title: one line of text naming the case in the summary (default: the file's name). */
#include "reader.h"

#include <stdio.h>

int case_read_title(case_ctx *x, struct fy_node *root, struct fy_node *t)
{
    hk_case *c = x->c;
    if (t && !case_scalar(t)) return case_err_at(x, t, "title must be one line of text");
    snprintf(c->title, sizeof c->title, "%s", t ? case_scalar(t) : c->name);
    return 0;
}
