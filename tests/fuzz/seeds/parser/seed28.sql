SELECT 1 = 1, 'a' < 'b', 1.0 >= 2 FROM s
