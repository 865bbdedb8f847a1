// A unit square plate (built-in kernel) with a 10 mm square notch in one side: its shortest
// curves are 0.01 long. The refine suite checks that geometry.refine: auto keeps Gmsh's coarse
// size within them (mesh/gmsh_load.c, auto_levels).
n = 0.01;
Point(1) = {0, 0, 0};
Point(2) = {0.5, 0, 0};
Point(3) = {0.5, n, 0};
Point(4) = {0.5 + n, n, 0};
Point(5) = {0.5 + n, 0, 0};
Point(6) = {1, 0, 0};
Point(7) = {1, 1, 0};
Point(8) = {0, 1, 0};
For i In {1 : 7}
  Line(i) = {i, i + 1};
EndFor
Line(8) = {8, 1};
Curve Loop(1) = {1 : 8};
Plane Surface(1) = {1};
Physical Surface("plate") = {1};
Physical Curve("left") = {8};
