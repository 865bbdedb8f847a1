// Cantilever beam: 1 m long, 0.1 m x 0.1 m square section, clamped at x = 0.
// Units: SI (m). Physical groups: volume "beam"; surfaces "fixed" (x = 0), "tip" (x = L).
SetFactory("OpenCASCADE");
L = 1.0;
b = 0.1;
h = 0.1;
Box(1) = {0, 0, 0, L, b, h};
eps = 1e-6;
Physical Volume("beam") = {1};
Physical Surface("fixed") = Surface In BoundingBox{-eps, -eps, -eps, eps, b + eps, h + eps};
Physical Surface("tip") = Surface In BoundingBox{L - eps, -eps, -eps, L + eps, b + eps, h + eps};
Mesh.MeshSizeMax = 0.05;
