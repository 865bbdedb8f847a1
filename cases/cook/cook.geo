// Cook's membrane: a tapered panel clamped on the left, sheared on the right.
// Units: consistent (the classic non-dimensional setup: E = 1, nu = 1/3, F = 1).
// Physical groups: surface "membrane"; curves "clamp" (x = 0), "load" (x = 48, both halves);
// point "C" (48, 52), the middle of the loaded edge, where the vertical displacement is read.
lc = 4;
Point(1) = {0, 0, 0, lc};
Point(2) = {48, 44, 0, lc};
Point(3) = {48, 60, 0, lc};
Point(4) = {0, 44, 0, lc};
Point(5) = {48, 52, 0, lc};
Line(1) = {1, 2};
Line(2) = {2, 5};
Line(5) = {5, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 5, 3, 4};
Plane Surface(1) = {1};
Physical Surface("membrane") = {1};
Physical Curve("clamp") = {4};
Physical Curve("load") = {2, 5};
Physical Curve("top") = {3};
Physical Curve("bottom") = {1};
Physical Point("C") = {5};
