placement_SRCS := planner/placement/problem.c planner/placement/eval.c \
                  planner/placement/baselines.c planner/placement/game.c \
                  planner/placement/rebalance.c
placement_USES := base
UNIT_TESTS += test_placement:placement
