// Cylinder of radius 1 and height 2 along z (OpenCASCADE): a curved side, two circles and two
// flat ends; every surface in a group, so that the other nodes are inside.
SetFactory("OpenCASCADE");
Cylinder(1) = {0, 0, 0, 0, 0, 2, 1};
eps = 1e-6;
Physical Volume("body") = {1};
Physical Surface("ends") = Surface In BoundingBox{-1 - eps, -1 - eps, -eps, 1 + eps, 1 + eps, eps};
Physical Surface("ends") += Surface In BoundingBox{-1 - eps, -1 - eps, 2 - eps, 1 + eps, 1 + eps, 2 + eps};
Physical Surface("side") = {1};
Physical Curve("rims") = Curve In BoundingBox{-1 - eps, -1 - eps, -eps, 1 + eps, 1 + eps, eps};
Mesh.MeshSizeMax = 0.4;
