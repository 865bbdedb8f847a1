// Source of block_1x2x1.step (written with: gmsh -0 block.geo -o block_1x2x1.step).
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 2, 1};
