SELECT t.*, u.* FROM s t JOIN u ON t.k = u.k WITHIN 2 MINUTES
