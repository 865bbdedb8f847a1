// NAFEMS FV41: a free thick cylinder, axisymmetric: the r-z section (x = r, y = z) of a tube of
// inner radius 1.8 m, outer radius 2.2 m and length 10 m. Units: SI (m).
// Physical groups: surface "wall"; curves "bore" (r = 1.8), "outside" (r = 2.2).
lc = 0.2;
Point(1) = {1.8, 0, 0, lc};
Point(2) = {2.2, 0, 0, lc};
Point(3) = {2.2, 10, 0, lc};
Point(4) = {1.8, 10, 0, lc};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Physical Surface("wall") = {1};
Physical Curve("bore") = {4};
Physical Curve("outside") = {2};
