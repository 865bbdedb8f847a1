// A .geo with a syntax error (missing brace) on line 3.
Point(1) = {0, 0, 0, 1};
Point(2) = {1, 0, 0, 1;
Line(1) = {1, 2};
