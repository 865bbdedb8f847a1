// Cantilever 1 x 0.1 x 0.1 along x, meshed like a boundary layer: the section's lower half
// (z < 0.05) in quadrilaterals, its upper half in triangles, the whole section extruded in
// layers, which gives hexahedra below and prisms (wedges) above, sharing quadrilateral faces.
h = 0.025;
Point(1) = {0, 0, 0, h};
Point(2) = {0, 0.1, 0, h};
Point(3) = {0, 0.1, 0.05, h};
Point(4) = {0, 0, 0.05, h};
Point(5) = {0, 0.1, 0.1, h};
Point(6) = {0, 0, 0.1, h};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Line(5) = {3, 5};
Line(6) = {5, 6};
Line(7) = {6, 4};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Curve Loop(2) = {-3, 5, 6, 7};
Plane Surface(2) = {2};
Transfinite Curve{1, 3} = 5;
Transfinite Curve{2, 4} = 3;
Transfinite Surface{1};
Recombine Surface{1};
lower[] = Extrude {1, 0, 0} { Surface{1}; Layers{20}; Recombine; };
upper[] = Extrude {1, 0, 0} { Surface{2}; Layers{20}; Recombine; };
Physical Volume("beam") = {lower[1], upper[1]};
Physical Surface("fixed") = {1, 2};
Physical Surface("tip") = {lower[0], upper[0]};
