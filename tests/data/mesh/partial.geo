// mixed.geo with only the quad half in a physical surface: the triangles are dropped.
Point(1) = {0, 0, 0, 0.25};
Point(2) = {1, 0, 0, 0.25};
Point(3) = {2, 0, 0, 0.25};
Point(4) = {2, 1, 0, 0.25};
Point(5) = {1, 1, 0, 0.25};
Point(6) = {0, 1, 0, 0.25};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 5};
Line(5) = {5, 6};
Line(6) = {6, 1};
Line(7) = {2, 5};
Transfinite Curve{2, 3, 4, 7} = 5;
Curve Loop(1) = {1, 7, 5, 6};
Plane Surface(1) = {1};
Curve Loop(2) = {2, 3, 4, -7};
Plane Surface(2) = {2};
Transfinite Surface{2};
Recombine Surface{2};

Physical Surface("quads") = {2};

Physical Curve("right") = {3};
