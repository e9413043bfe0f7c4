SELECT a, b, c FROM s WHERE a = 1 AND b <> 2 OR c != 3
