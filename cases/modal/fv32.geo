// NAFEMS FV32: cantilevered tapered membrane, 10 m long, 5 m wide at the clamped edge (x = 0)
// tapering symmetrically to 1 m at the free end (x = 10). Units: SI (m).
// Physical groups: surface "membrane"; curves "clamp" (x = 0), "tip" (x = 10).
lc = 1.0;
Point(1) = {0, 0, 0, lc};
Point(2) = {10, 2, 0, lc};
Point(3) = {10, 3, 0, lc};
Point(4) = {0, 5, 0, lc};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Physical Surface("membrane") = {1};
Physical Curve("clamp") = {4};
Physical Curve("tip") = {2};
