/* Reference elements of assembly/: shape functions in Gmsh node ordering, Gauss rules, and
 * their values tabulated at the quadrature points, at the reduced rule's points and at the
 * nodes. Private to assembly/, postproc/, the device code of fem_cuda/ and the tests: an
 * hk_elref is plain data, so a device copy of the table serves the kernels (which never
 * evaluate shape functions themselves).
 *
 * Reference domains: line/quad/hex [-1,1]^d; tri (0,0),(1,0),(0,1); tet (0,0,0),(1,0,0),
 * (0,1,0),(0,0,1); wedge tri x [-1,1]; pyramid base [-1,1]^2 at zeta 0, apex (0,0,1).
 * Quadrature is "full": exact for the stiffness of undistorted elements (tri3/tet4 1 point,
 * tri6 3, tet10 4, quad4 2x2, quad8/9 3x3, hex8 2x2x2, hex20/27 3x3x3, wedge6 3 x 2,
 * wedge15/18 6 x 3, pyr5 2x2x2 and pyr13/14 3x3x3 collapsed-hexahedron Gauss-Jacobi rules);
 * facet rules are one degree richer where cheap (tri6 facets 6 points). */
#ifndef HOOKE_ASSEMBLY_ELEMENTS_H
#define HOOKE_ASSEMBLY_ELEMENTS_H

#include "hooke/fem.h"
#include "../mesh/shape.h" /* hk_el_shape, hk_el_node_xi */

#define HK_EL_MAXN 27 /* most nodes of an element */
#define HK_EL_MAXQ 27 /* most quadrature points of a rule */
#define HK_EL_MAXQR 8 /* most points of a reduced rule (selective integration) */

typedef struct hk_elref {
    hk_eltype type;
    const char *name;
    int dim; /* reference dimension: 1 line, 2 tri/quad, 3 tet/hex/wedge/pyramid */
    int nnodes;
    int ncorners; /* vertices (the first ncorners nodes in Gmsh ordering) */
    int simplex;  /* 1 for tri/tet (barycentric reference) */
    int nqp;      /* points of the element's rule */
    double qp[HK_EL_MAXQ][3];
    double qw[HK_EL_MAXQ];
    /* tabulated at the quadrature points: N[q][a], dN[q][a][k] = dN_a/dxi_k */
    double N[HK_EL_MAXQ][HK_EL_MAXN];
    double dN[HK_EL_MAXQ][HK_EL_MAXN][3];
    double xi[HK_EL_MAXN][3]; /* reference coordinates of the nodes */
    /* the reduced rule of selective integration (hk_elref_reduced_rule; nqr = 0 for tri3 and
     * tet4) and the shape functions tabulated at its points */
    int nqr;
    double qpr[HK_EL_MAXQR][3], qwr[HK_EL_MAXQR];
    double Nr[HK_EL_MAXQR][HK_EL_MAXN];
    double dNr[HK_EL_MAXQR][HK_EL_MAXN][3];
    /* derivatives at the element's own nodes: dNn[a][b][k] = dN_b/dxi_k at node a (stress
     * recovery at the nodes) */
    double dNn[HK_EL_MAXN][HK_EL_MAXN][3];
} hk_elref;

/* The reference element of t, or NULL when t has no kernel (point). The tables are built
 * once, thread-safely. */
const hk_elref *hk_elref_get(hk_eltype t);
/* The reference element of t tabulated at the points of its mass rule, which integrates
 * N_a N_b exactly on undistorted elements, in 2D also with the axisymmetric weight r (tri3 and
 * tri6 7 points of degree 5, tet4 4 points of degree 2, tet10 14 points of degree 5; the
 * others their own rule), for the consistent mass matrix; NULL as hk_elref_get. */
const hk_elref *hk_elref_mass_get(hk_eltype t);
/* Name of any element type ("hex8"), also those without kernel; "?" when out of range. */
const char *hk_el_name(int t);

/* The rule used for facet loads of facet type t (lines 3 points, triangles 6, quads 3x3):
 * exact for traction and pressure on straight and curved quadratic facets of moderate
 * curvature, at negligible cost (facets are few). */
void hk_elref_facet_rule(hk_eltype t, int *nq, double (*qp)[3], double *qw);

/* The reduced rule of the volumetric part under selective integration (quad4/hex8 1 point,
 * quad8/9 2x2, hex20/27 2x2x2, tri6/tet10 1 point, wedge6 and pyr5 1 point, wedge15/18 3 x 2,
 * pyr13/14 2x2x2 collapsed; the wedge and pyramid rules integrate div N exactly over
 * straight-sided cells; points of the product rules ordered with the first coordinate
 * fastest); returns its point count, 0 for tri3/tet4 (one point already). */
int hk_elref_reduced_rule(hk_eltype t, int *nq, double (*qp)[3], double *qw);
/* The field with values v at the reduced points, at reference point xi (the inline
 * hk_el_reduced_interp of element_kernels.h). */
double hk_elref_reduced_interp(hk_eltype t, const double xi[3], const double *v);

#endif
