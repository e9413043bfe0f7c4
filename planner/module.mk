planner_SRCS := planner/planner.c planner/bind.c planner/schema.c planner/explain.c planner/placement_bridge.c
planner_USES := placement parser base
UNIT_TESTS += test_planner:planner
