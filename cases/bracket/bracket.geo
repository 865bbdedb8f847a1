// L-bracket: a 120 x 60 x 10 mm base with two M10 bolt holes, a 60 x 10 x 80 mm upright with
// a 16 mm pin hole, and a 5 mm fillet in the inner corner.
// Units: SI (m). Physical groups: volume "bracket"; surfaces "bolts" (both bolt-hole bores,
// held sideways), "top" (the upright's top face, loaded), "pin" (the pin-hole bore), "base_bottom".
SetFactory("OpenCASCADE");
t = 0.01;     // plate thickness
w = 0.06;     // width (y)
lb = 0.12;    // base length (x)
hu = 0.08;    // upright height (z)
rf = 0.005;   // fillet radius
rb = 0.0055;  // bolt-hole radius (M10 clearance)
rp = 0.008;   // pin-hole radius
Box(1) = {0, 0, 0, lb, w, t};
Box(2) = {0, 0, 0, t, w, hu};
BooleanUnion(3) = { Volume{1}; Delete; }{ Volume{2}; Delete; };
eps = 1e-6;
corner() = Curve In BoundingBox{t - eps, -eps, t - eps, t + eps, w + eps, t + eps};
f() = Fillet{3}{corner()}{rf};
Cylinder(10) = {0.085, 0.018, -t, 0, 0, 3 * t, rb};
Cylinder(11) = {0.085, 0.042, -t, 0, 0, 3 * t, rb};
Cylinder(12) = {-t, w / 2, 0.055, 3 * t, 0, 0, rp};
BooleanDifference(20) = { Volume{f()}; Delete; }{ Volume{10, 11, 12}; Delete; };
Physical Volume("bracket") = {20};
Physical Surface("bolts") = Surface In BoundingBox{0.085 - rb - eps, 0.018 - rb - eps, -eps,
                                                   0.085 + rb + eps, 0.042 + rb + eps, t + eps};
Physical Surface("top") = Surface In BoundingBox{-eps, -eps, hu - eps, t + eps, w + eps, hu + eps};
Physical Surface("pin") = Surface In BoundingBox{-eps, w / 2 - rp - eps, 0.055 - rp - eps,
                                                 t + eps, w / 2 + rp + eps, 0.055 + rp + eps};
Physical Surface("base_bottom") = Surface In BoundingBox{-eps, -eps, -eps, lb + eps, w + eps, eps};
// Finer around the holes and the fillet, where the stresses concentrate.
Field[1] = Distance;
Field[1].SurfacesList = {Surface In BoundingBox{0.085 - rb - eps, 0.018 - rb - eps, -eps,
                                                0.085 + rb + eps, 0.042 + rb + eps, t + eps},
                         Surface In BoundingBox{t - eps, -eps, t - eps, t + rf + eps, w + eps, t + rf + eps}};
Field[2] = Threshold;
Field[2].InField = 1;
Field[2].SizeMin = 0.002;
Field[2].SizeMax = 0.006;
Field[2].DistMin = 0.001;
Field[2].DistMax = 0.012;
Background Field = 2;
Mesh.MeshSizeExtendFromBoundary = 0;
Mesh.MeshSizeFromPoints = 0;
Mesh.MeshSizeFromCurvature = 0;
