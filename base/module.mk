base_SRCS := base/base.c
base_USES :=
UNIT_TESTS += test_base:base
