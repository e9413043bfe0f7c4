SELECT "select", "from", "Upper", "with space", "a""b" FROM "my stream"
