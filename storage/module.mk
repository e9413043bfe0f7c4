storage_SRCS := storage/storage.c
storage_USES := base
UNIT_TESTS += test_storage:storage
