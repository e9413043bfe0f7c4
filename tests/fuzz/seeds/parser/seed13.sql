SELECT a || b || c, (a || b) || c, a || (b || c) FROM s
