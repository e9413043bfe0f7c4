SET parallelism = 4
