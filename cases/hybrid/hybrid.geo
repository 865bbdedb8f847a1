// Cantilever 1 x 0.1 x 0.1 along x in four element kinds: hexahedra at the clamped root
// (x < 0.4, a recombined extrusion), tetrahedra in the middle (0.4 < x < 0.7) with the
// pyramids Gmsh puts on the quadrilaterals they meet, and prisms towards the tip (x > 0.7,
// the tetrahedra's triangles extruded in layers, as in a boundary-layer mesh).
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
hexes[] = Extrude {0.4, 0, 0} { Surface{1}; Layers{8}; Recombine; };
tets[] = Extrude {0.3, 0, 0} { Surface{hexes[0]}; };
prisms[] = Extrude {0.3, 0, 0} { Surface{tets[0]}; Layers{6}; Recombine; };
Physical Volume("beam") = {hexes[1], tets[1], prisms[1]};
Physical Surface("fixed") = {1};
Physical Surface("tip") = {prisms[0]};
