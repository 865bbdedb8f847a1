// A thin-walled steel tube along x: length 0.5 m, outer radius 50 mm, inner radius 40 mm.
// Units: SI (m). Physical groups: volume "tube"; surfaces "root" (x = 0) and "tip" (x = L).
SetFactory("OpenCASCADE");
L = 0.5;
ro = 0.05;
ri = 0.04;
Cylinder(1) = {0, 0, 0, L, 0, 0, ro};
Cylinder(2) = {0, 0, 0, L, 0, 0, ri};
BooleanDifference(3) = {Volume{1}; Delete;}{Volume{2}; Delete;};
eps = 1e-6;
Physical Volume("tube") = {3};
Physical Surface("root") = Surface In BoundingBox{-eps, -ro - eps, -ro - eps, eps, ro + eps, ro + eps};
Physical Surface("tip") = Surface In BoundingBox{L - eps, -ro - eps, -ro - eps, L + eps, ro + eps, ro + eps};
