// Third-order prisms (Gmsh type 90, prism40): a cell type Hooke has no kernel for.
Point(1) = {0, 0, 0, 2};
Point(2) = {1, 0, 0, 2};
Point(3) = {0, 1, 0, 2};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 1};
Curve Loop(1) = {1, 2, 3};
Plane Surface(1) = {1};
out[] = Extrude {0, 0, 1} { Surface{1}; Layers{1}; Recombine; };
Physical Volume("body") = {out[1]};
Physical Surface("bottom") = {1};
// gmsh prism40.geo -3 -order 3 -format msh41 -o prism40_v41.msh
