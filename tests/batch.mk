# exec/ value, batch and format layer (batch.c, format.c): sources, unit test, fuzz targets.
# Kept out of exec/module.mk so two people can edit the exec build at once;
# exec/module.mk must append (exec_SRCS +=) or come before this file (it
# does: */module.mk is included before tests/*.mk).  The test and fuzz
# targets only pull batch.o and format.o out of libexec.a, and those need
# parser (sql_type_name) and base (and Jansson, through PKG_LIBS).
exec_SRCS += exec/batch.c exec/format.c
UNIT_TESTS += test_batch:exec,parser,base
FUZZ_TARGETS += fuzz_csv:exec,parser,base fuzz_json:exec,parser,base fuzz_batch:exec,base
