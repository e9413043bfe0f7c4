storage_SRCS := storage/env.c storage/verify.c storage/kv.c storage/log.c storage/state.c
storage_USES := base
UNIT_TESTS += test_storage:storage
