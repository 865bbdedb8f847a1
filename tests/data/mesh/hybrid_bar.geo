// Bar 1 x 0.1 x 0.1 along x in four element kinds: hexahedra (x < 0.4, a recombined
// extrusion), tetrahedra (0.4 < x < 0.7) with the pyramids Gmsh puts on the quadrilaterals
// they meet, and prisms (x > 0.7, the tetrahedra's triangles extruded in layers).
h = 0.05;
Point(1) = {0, 0, 0, h};
Point(2) = {0, 0.1, 0, h};
Point(3) = {0, 0.1, 0.1, h};
Point(4) = {0, 0, 0.1, h};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Transfinite Curve{1:4} = 3;
Transfinite Surface{1};
Recombine Surface{1};
// Extrude returns the top surface, the volume, then the sides in the order of the source
// surface's curves: 1 (z = 0), 2 (y = 0.1), 3 (z = 0.1), 4 (y = 0).
a[] = Extrude {0.4, 0, 0} { Surface{1}; Layers{4}; Recombine; };
b[] = Extrude {0.3, 0, 0} { Surface{a[0]}; };
c[] = Extrude {0.3, 0, 0} { Surface{b[0]}; Layers{3}; Recombine; };
Physical Volume("bar") = {a[1], b[1], c[1]};
Physical Surface("xmin") = {1};
Physical Surface("xmax") = {c[0]};
Physical Surface("ymin") = {a[5], b[5], c[5]};
Physical Surface("zmin") = {a[2], b[2], c[2]};
// The meshes the tests read (Delaunay: HXT does not mesh volumes bounded by quadrilaterals;
// written once because Gmsh 4.8 aborts when it meshes pyramids a second time in a process):
//   gmsh hybrid_bar.geo -3 -string "Mesh.Algorithm3D=1;" -format msh41 -o hybrid_bar_o1_v41.msh
//   gmsh hybrid_bar.geo -3 -order 2 -string "Mesh.Algorithm3D=1; Mesh.SecondOrderIncomplete=1;"
//        -format msh41 -o hybrid_bar_o2i_v41.msh
//   gmsh hybrid_bar.geo -3 -order 2 -string "Mesh.Algorithm3D=1;" -format msh41
//        -o hybrid_bar_o2_v41.msh
