base_SRCS := base/base.c base/cpu.c
base_USES :=
UNIT_TESTS += test_base:base
