/* The table of the case file's top-level sections (docs/case-format.md). The top-level parse
 * (app/case/load.c) reads them from it, and its "valid keys" hint lists its names. A new
 * section is its own file with a case_read_NAME (app/case/reader.h) and one line here. */
#include "reader.h"

#include <stddef.h>

const case_section case_sections[] = {
    /* early (1): title, then analysis, which fixes the dimension the others are checked against */
    {"title", case_read_title, 1, NULL},
    {"geometry", case_read_geometry, 0,
     "the case has no 'geometry' section; add geometry: {file: part.geo} "
     "or geometry: {generate: {shape: box, ...}}"},
    {"analysis", case_read_analysis, 1,
     "the case has no 'analysis'; add analysis: 3d, plane_stress, plane_strain "
     "or axisymmetric"},
    /* early too: a modal analysis lets supports be left out (a free-floating part) */
    {"modal", case_read_modal, 1, NULL},
    {"materials", case_read_materials, 0,
     "the case has no 'materials'; add materials: [{name: steel, E: 210e9, "
     "nu: 0.3}]"},
    /* required but for a modal analysis: case_read_supports says so */
    {"supports", case_read_supports, 0, NULL},
    {"loads", case_read_loads, 0, NULL},
    {"load_cases", case_read_load_cases, 0, NULL},
    {"solver", case_read_solver, 0, NULL},
    {"output", case_read_output, 0, NULL},
    {NULL, NULL, 0, NULL},
};
