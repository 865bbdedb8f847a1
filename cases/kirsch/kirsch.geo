// Plate with a circular hole under uniaxial tension (Kirsch), one quarter by symmetry.
// Units: SI (m). Hole radius a = 10 mm in a 200 mm x 200 mm plate (quarter: 100 mm x 100 mm).
// Physical groups: surface "plate"; curves "hole", "left" (x = 0), "bottom" (y = 0),
// "right" (x = L, loaded), "top" (y = L, free).
SetFactory("OpenCASCADE");
a = 0.01;
L = 0.1;
Rectangle(1) = {0, 0, 0, L, L};
Disk(2) = {0, 0, 0, a, a};
BooleanDifference(3) = { Surface{1}; Delete; }{ Surface{2}; Delete; };
eps = 1e-6;
hole() = Curve In BoundingBox{-eps, -eps, -eps, a + eps, a + eps, eps};
left() = Curve In BoundingBox{-eps, a - eps, -eps, eps, L + eps, eps};
bottom() = Curve In BoundingBox{a - eps, -eps, -eps, L + eps, eps, eps};
right() = Curve In BoundingBox{L - eps, -eps, -eps, L + eps, L + eps, eps};
top() = Curve In BoundingBox{-eps, L - eps, -eps, L + eps, L + eps, eps};
Physical Surface("plate") = {3};
Physical Curve("hole") = {hole()};
Physical Curve("left") = {left()};
Physical Curve("bottom") = {bottom()};
Physical Curve("right") = {right()};
Physical Curve("top") = {top()};
// Fine at the hole, coarse far away (geometry.size caps the largest element).
Field[1] = Distance;
Field[1].CurvesList = {hole()};
Field[2] = Threshold;
Field[2].InField = 1;
Field[2].SizeMin = a / 8;
Field[2].SizeMax = L / 8;
Field[2].DistMin = 0;
Field[2].DistMax = 4 * a;
Background Field = 2;
Mesh.MeshSizeExtendFromBoundary = 0;
Mesh.MeshSizeFromPoints = 0;
Mesh.MeshSizeFromCurvature = 0;
