// NAFEMS LE1: elliptic membrane under outward pressure, plane stress, one quarter.
// Units: SI (m). Inner ellipse x^2/2^2 + y^2/1^2 = 1, outer x^2/3.25^2 + y^2/2.75^2 = 1.
// Physical groups: surface "membrane"; curves "inner" (free), "outer" (loaded),
// "AB" (x = 0, u_x = 0), "CD" (y = 0, u_y = 0); point "D" = (2, 0) where sigma_yy is read.
SetFactory("OpenCASCADE");
Disk(1) = {0, 0, 0, 3.25, 2.75};
Disk(2) = {0, 0, 0, 2, 1};
Rectangle(3) = {0, 0, 0, 3.25, 2.75};
BooleanDifference(4) = { Surface{1}; Delete; }{ Surface{2}; Delete; };
BooleanIntersection(5) = { Surface{4}; Delete; }{ Surface{3}; Delete; };
eps = 1e-6;
all() = Curve In BoundingBox{-eps, -eps, -eps, 3.25 + eps, 2.75 + eps, eps};
inner() = Curve In BoundingBox{-eps, -eps, -eps, 2 + eps, 1 + eps, eps};
cd() = Curve In BoundingBox{2 - eps, -eps, -eps, 3.25 + eps, eps, eps};
ab() = Curve In BoundingBox{-eps, 1 - eps, -eps, eps, 2.75 + eps, eps};
outer() = all();
outer() -= {inner(), cd(), ab()};
d() = Point In BoundingBox{2 - eps, -eps, -eps, 2 + eps, eps, eps};
Physical Surface("membrane") = {5};
Physical Curve("inner") = {inner()};
Physical Curve("outer") = {outer()};
Physical Curve("AB") = {ab()};
Physical Curve("CD") = {cd()};
Physical Point("D") = {d()};
Mesh.MeshSizeMax = 0.2;
