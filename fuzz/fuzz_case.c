/* libFuzzer target: the case-file reader (app/case*), and, for a case on a small generated
 * mesh, the binding of its materials, supports and loads to that mesh. */
#include "case.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".yaml");
    if (!path) return 0;
    hk_case c;
    if (hk_case_load(path, 0, NULL, &c)) {
        hk_error_clear();
        return 0;
    }
    long cells = 1;
    for (int d = 0; d < c.gen_dim; d++)
        cells *= c.gen_cells[d] > 0 ? c.gen_cells[d] : 1;
    if (c.generate && cells <= 512) {
        hk_mesh m = {0};
        int err = c.gen_dim == 2
                      ? hk_mesh_rectangle(c.gen_size[0], c.gen_size[1], c.gen_cells[0],
                                          c.gen_cells[1], c.gen_element, &m)
                      : hk_mesh_box(c.gen_size[0], c.gen_size[1], c.gen_size[2], c.gen_cells[0],
                                    c.gen_cells[1], c.gen_cells[2], c.gen_element, &m);
        hk_case_model model = {0};
        if (!err && !hk_case_bind(&c, &m, &model)) hk_case_model_free(&model);
        hk_mesh_free(&m);
    }
    hk_case_free(&c);
    hk_error_clear();
    return 0;
}
