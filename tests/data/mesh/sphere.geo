// Ball of radius 0.5 centred at (1, 2, 3) (OpenCASCADE): one spherical surface with a seam
// and two poles.
SetFactory("OpenCASCADE");
Sphere(1) = {1, 2, 3, 0.5};
Physical Volume("ball") = {1};
Physical Surface("skin") = {1};
Mesh.MeshSizeMax = 0.15;
