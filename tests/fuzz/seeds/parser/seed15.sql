SELECT a FROM s WHERE name LIKE 'a%' AND name NOT LIKE '%z'
