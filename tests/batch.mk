# exec/ value, batch and format layer (batch.c, fmt_*.c): sources, unit test, fuzz targets.
# Kept out of exec/module.mk so two people can edit the exec build at once;
# exec/module.mk must append (exec_SRCS +=) or come before this file (it
# does: */module.mk is included before tests/*.mk).  The test and fuzz
# targets name exec and link its USES closure, but they only pull batch.o
# and fmt_*.o (and what those call: base, Jansson through PKG_LIBS) out of
# the libraries.
exec_SRCS += exec/batch.c exec/fmt_value.c exec/fmt_encode.c exec/fmt_decoder.c exec/fmt_csv.c exec/fmt_json.c exec/fmt_decode.c
UNIT_TESTS += test_batch:exec
FUZZ_TARGETS += fuzz_csv:exec fuzz_json:exec fuzz_batch:exec
