// NAFEMS LE10: thick elliptic plate under uniform pressure, one quarter.
// Units: SI (m). Inner ellipse x^2/2^2 + y^2/1^2 = 1, outer x^2/3.25^2 + y^2/2.75^2 = 1,
// thickness 0.6 m (z from -0.3 to 0.3), built as two 0.3 m layers so that the outer face
// carries the mid-plane curve z = 0.
// Physical groups: volume "plate"; surfaces "top" (z = 0.3, loaded), "DC" (y = 0, u_y = 0),
// "AB" (x = 0, u_x = 0), "outer" (u_x = u_y = 0); curve "outer_mid" (z = 0 on the outer
// face, u_z = 0); point "D" = (2, 0, 0.3) where sigma_yy is read.
SetFactory("OpenCASCADE");
Disk(1) = {0, 0, -0.3, 3.25, 2.75};
Disk(2) = {0, 0, -0.3, 2, 1};
Rectangle(3) = {0, 0, -0.3, 3.25, 2.75};
BooleanDifference(4) = { Surface{1}; Delete; }{ Surface{2}; Delete; };
BooleanIntersection(5) = { Surface{4}; Delete; }{ Surface{3}; Delete; };
e1[] = Extrude {0, 0, 0.3} { Surface{5}; };
e2[] = Extrude {0, 0, 0.3} { Surface{e1[0]}; };
BooleanFragments{ Volume{e1[1], e2[1]}; Delete; }{}
eps = 1e-6;
X = 3.25; Y = 2.75;
top() = Surface In BoundingBox{-eps, -eps, 0.3 - eps, X + eps, Y + eps, 0.3 + eps};
bottom() = Surface In BoundingBox{-eps, -eps, -0.3 - eps, X + eps, Y + eps, -0.3 + eps};
mid() = Surface In BoundingBox{-eps, -eps, -eps, X + eps, Y + eps, eps};
dc() = Surface In BoundingBox{2 - eps, -eps, -0.3 - eps, X + eps, eps, 0.3 + eps};
ab() = Surface In BoundingBox{-eps, 1 - eps, -0.3 - eps, eps, Y + eps, 0.3 + eps};
inner() = Surface In BoundingBox{-eps, -eps, -0.3 - eps, 2 + eps, 1 + eps, 0.3 + eps};
outer() = Surface In BoundingBox{-eps, -eps, -0.3 - eps, X + eps, Y + eps, 0.3 + eps};
outer() -= {top(), bottom(), mid(), dc(), ab(), inner()};
cmid() = Curve In BoundingBox{-eps, -eps, -eps, X + eps, Y + eps, eps};
cin() = Curve In BoundingBox{-eps, -eps, -eps, 2 + eps, 1 + eps, eps};
cdc() = Curve In BoundingBox{2 - eps, -eps, -eps, X + eps, eps, eps};
cab() = Curve In BoundingBox{-eps, 1 - eps, -eps, eps, Y + eps, eps};
cmid() -= {cin(), cdc(), cab()};
d() = Point In BoundingBox{2 - eps, -eps, 0.3 - eps, 2 + eps, eps, 0.3 + eps};
Physical Volume("plate") = {Volume{:}};
Physical Surface("top") = {top()};
Physical Surface("DC") = {dc()};
Physical Surface("AB") = {ab()};
Physical Surface("outer") = {outer()};
Physical Curve("outer_mid") = {cmid()};
Physical Point("D") = {d()};
Mesh.MeshSizeMax = 0.15;
