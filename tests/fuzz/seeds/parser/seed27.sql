SELECT a FROM s WHERE ((a = 1) OR (b = 2)) AND ((c = 3) OR (d = 4))
