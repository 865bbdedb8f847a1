// Thick-walled cylinder under internal pressure, axisymmetric: the r-z section of a slice of
// the tube (x = r, y = z; the axis of symmetry is x = 0). Units: SI (m).
// Inner radius a = 0.1 m, outer radius b = 0.2 m, slice height h = 0.02 m.
// Physical groups: surface "wall"; curves "bore" (r = a, pressurised), "outer" (r = b, free),
// "bottom" (z = 0) and "top" (z = h), both held in z (a long tube: eps_zz = 0).
a = 0.1;
b = 0.2;
h = 0.02;
Point(1) = {a, 0, 0};
Point(2) = {b, 0, 0};
Point(3) = {b, h, 0};
Point(4) = {a, h, 0};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Physical Surface("wall") = {1};
Physical Curve("bottom") = {1};
Physical Curve("outer") = {2};
Physical Curve("top") = {3};
Physical Curve("bore") = {4};
Mesh.MeshSizeMax = 0.01;
