base_SRCS := base/base.c base/cpu.c base/log.c base/rowtab.c base/time.c
base_USES :=
UNIT_TESTS += test_base:base
