// Lame thick-walled cylinder under internal pressure, plane strain, one quarter by symmetry.
// Units: SI (m). Inner radius a = 0.1 m, outer radius b = 0.2 m.
// Physical groups: surface "wall"; curves "bore" (r = a, pressurised), "outer" (r = b, free),
// "xsym" (y = 0, u_y = 0), "ysym" (x = 0, u_x = 0).
SetFactory("OpenCASCADE");
a = 0.1;
b = 0.2;
Disk(1) = {0, 0, 0, b, b};
Disk(2) = {0, 0, 0, a, a};
Rectangle(3) = {0, 0, 0, b, b};
BooleanDifference(4) = { Surface{1}; Delete; }{ Surface{2}; Delete; };
BooleanIntersection(5) = { Surface{4}; Delete; }{ Surface{3}; Delete; };
eps = 1e-6;
all() = Curve In BoundingBox{-eps, -eps, -eps, b + eps, b + eps, eps};
bore() = Curve In BoundingBox{-eps, -eps, -eps, a + eps, a + eps, eps};
xsym() = Curve In BoundingBox{a - eps, -eps, -eps, b + eps, eps, eps};
ysym() = Curve In BoundingBox{-eps, a - eps, -eps, eps, b + eps, eps};
outer() = all();
outer() -= {bore(), xsym(), ysym()};
Physical Surface("wall") = {5};
Physical Curve("bore") = {bore()};
Physical Curve("outer") = {outer()};
Physical Curve("xsym") = {xsym()};
Physical Curve("ysym") = {ysym()};
Mesh.MeshSizeMax = 0.01;
