SELECT a FROM s WHERE a LIKE b || '%'
