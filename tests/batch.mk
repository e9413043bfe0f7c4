# exec/ value, batch and format layer (batch.c, format.c): sources, unit test, fuzz targets.
# Kept out of exec/module.mk so two people can edit the exec build at once;
# exec/module.mk must append (exec_SRCS +=) or be included before this file
# (it is: */module.mk comes before tests/*.mk).  The test and fuzz targets
# only need batch.o/format.o from libexec.a, which depend on base alone.
exec_SRCS += exec/batch.c
UNIT_TESTS += test_batch:exec,base
