SET debug = TRUE
