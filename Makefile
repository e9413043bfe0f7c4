# Ares build.
#
# `make`        installs missing Debian packages, then builds build/ares-sql (and the other binaries)
# `make run`    ... then opens ares-sql on an embedded engine (./ares-data)
# `make test`   ... then runs unit tests, scenario tests, the ASan/UBSan build and the fuzz smoke runs
#
# Each module describes its own sources, tests and fuzz targets in <dir>/module.mk,
# so two people working on two modules never edit the same build file.
# Generated sources (Lemon, re2c) go to $(BUILD) and are never committed.
#
# A module's dependencies are written once, in its m_USES: the modules whose
# headers its own files include, all below it in MODULES (DESIGN's order).
# A binary, unit test, fuzz target or benchmark names only its top module(s);
# it links their USES closure (the modules, their USES, theirs, ...) in
# MODULES' order (`link_libs` below).  `make check-uses` (run first by
# `make test`; scripts/check_uses.sh) fails when a USES list is not true: a
# module includes a header of a module outside its closure, names one that
# is not below it, or names one it does not include.

.DELETE_ON_ERROR:
.SUFFIXES:
MAKEFLAGS += --no-builtin-rules

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
FUZZ    ?=
PKGS    := lmdb libuv libedit jansson libcrypto

# Recursive (=) on purpose: pkg-config runs when a recipe needs it, after `deps`.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -lm -lpthread

WARN      := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wno-unused-parameter
GEN_WARN  := -Wall -Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable \
             -Wno-sign-compare -Wno-implicit-fallthrough -Wno-unused-function -Wno-unused-const-variable
comma     := ,
empty     :=
space     := $(empty) $(empty)
SAN_ON    := -fsanitize=address$(comma)undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_ON   := -fsanitize=fuzzer-no-link$(comma)address$(comma)undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -DARES_FUZZ
SANFLAGS  := $(if $(SAN),$(SAN_ON))
FUZZFLAGS := $(if $(FUZZ),$(FUZZ_ON))
BASEFLAGS  = -std=c11 -D_GNU_SOURCE -g $(OPT) -I. -I$(BUILD) $(SANFLAGS) $(FUZZFLAGS) $(PKG_CFLAGS) -MMD -MP
LDFLAGS   += $(SANFLAGS)

# Link order: highest module first (static libraries resolve left to right).
MODULES := cli cluster exec storage planner placement parser base

.PHONY: all build run test check-uses check-layers unit scenario asan fuzz fuzz-smoke deps clean \
        bench-engine bench-nirvana bench-cluster bench-recovery bench-smoke experiments

all: deps
	@$(MAKE) --no-print-directory build

deps:
	@./scripts/deps.sh

# ---------------------------------------------------------------- modules
# A module.mk sets, for module m:
#   m_SRCS   its C sources           m_GEN   generated C sources in $(BUILD)
#   m_USES   the modules below it whose headers its files include (not closed:
#            the closure is computed; scripts/check_uses.sh checks the list)
# and may append to BINS, UNIT_TESTS and FUZZ_TARGETS (name:top,top...: the
# binary links the USES closure of its top modules).
BINS         :=
UNIT_TESTS   :=
FUZZ_TARGETS :=
BENCHES      :=

# The USES closure of a list of modules, and the libraries it links, in link
# order.  One walk down MODULES adds the USES of each module already in the
# set, so it ends even on a wrong list (a USES entry above its module is not
# followed; check-uses reports it).  Defined before the includes: bench/*.mk
# expands link_libs as it reads its rules (after every module.mk set its USES).
uses_walk    = $(if $(2),$(call uses_walk,$(1) $(if $(filter $(firstword $(2)),$(1)),$($(firstword $(2))_USES)),$(wordlist 2,$(words $(2)),$(2))),$(1))
uses_closure = $(call uses_walk,$(1),$(MODULES))
lib_of    = $(BUILD)/lib$(1).a
libs_for  = $(foreach m,$(MODULES),$(if $(filter $(m),$(1)),$(call lib_of,$(m))))
link_libs = $(call libs_for,$(call uses_closure,$(1)))
include $(wildcard */module.mk planner/placement/module.mk tests/*.mk bench/*.mk)

objs_of = $(patsubst %.c,$(BUILD)/%.o,$($(1)_SRCS)) $(patsubst %.c,%.o,$($(1)_GEN))
# the libraries of a BINS/UNIT_TESTS/FUZZ_TARGETS entry name:top,top...
entry_name = $(word 1,$(subst :, ,$(1)))
entry_libs = $(call link_libs,$(subst $(comma), ,$(word 2,$(subst :, ,$(1)))))

define MODULE_RULES
$(call lib_of,$(1)): $(call objs_of,$(1))
	@mkdir -p $$(@D)
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call MODULE_RULES,$(m))))

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(WARN) $(CFLAGS) -c $< -o $@

# Generated sources compile with relaxed warnings.
$(BUILD)/%.o: $(BUILD)/%.c
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(GEN_WARN) $(CFLAGS) -c $< -o $@

# ---------------------------------------------------------------- binaries, tests
# BINS entries are name:top; the binary's main is in the top module's sources.
define BIN_RULE
$(BUILD)/$(call entry_name,$(1)): $(call entry_libs,$(1))
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS)
endef
$(foreach b,$(BINS),$(eval $(call BIN_RULE,$(b))))

# A unit test of several files lists the others in name_FILES (tests/unit/...c).
define UNIT_RULE
$(BUILD)/tests/$(call entry_name,$(1)): $(BUILD)/tests/unit/$(call entry_name,$(1)).o \
    $(patsubst %.c,$(BUILD)/%.o,$($(call entry_name,$(1))_FILES)) $(call entry_libs,$(1))
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) -lcmocka
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call UNIT_RULE,$(t))))

UNIT_BINS := $(foreach t,$(UNIT_TESTS),$(BUILD)/tests/$(call entry_name,$(t)))
BIN_FILES := $(foreach b,$(BINS),$(BUILD)/$(call entry_name,$(b)))

build: $(BIN_FILES) $(UNIT_BINS)

run: deps
	@$(MAKE) --no-print-directory build
	./$(BUILD)/ares-sql

# Unit tests: each binary in turn, stop at the first failure (cmocka reports on stderr).
unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; (cd tests && ../$$t 2>&1); done

scenario: $(BIN_FILES) $(BUILD)/tests/table_bench
	@./tests/scenario/run.sh $(BUILD)

# The USES lists are true (scripts/check_uses.sh): one argument per module,
# m=dir:use,use (dir: where its first source is).
check-uses:
	@./scripts/check_uses.sh $(foreach m,$(MODULES),$(m)=$(patsubst %/,%,$(dir $(firstword $($(m)_SRCS)))):$(subst $(space),$(comma),$(strip $($(m)_USES))))

# The files of exec/ call only the layers below them (docs/architecture.md's
# table, checked on the objects' symbols by scripts/check_layers.sh).
check-layers: build
	@./scripts/check_layers.sh docs/architecture.md $(BUILD)/exec

test: deps
	@$(MAKE) --no-print-directory check-uses
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory check-layers
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory scenario
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory fuzz-smoke
	@echo "make test: all passed"

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 OPT=-O1 unit

# ---------------------------------------------------------------- fuzzing (clang + libFuzzer)
define FUZZ_RULE
$(BUILD)/fuzz/$(call entry_name,$(1)): $(BUILD)/tests/fuzz/$(call entry_name,$(1)).o $(call entry_libs,$(1))
	@mkdir -p $$(@D)
	$$(CC) -fsanitize=fuzzer,address,undefined -o $$@ $$^ $$(PKG_LIBS)
endef
$(foreach f,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULE,$(f))))
FUZZ_BINS := $(foreach f,$(FUZZ_TARGETS),$(BUILD)/fuzz/$(call entry_name,$(f)))

fuzzers: $(FUZZ_BINS)

# FUZZ_SECONDS per target; the parser target gets at least 60 s in `make test`.
FUZZ_SECONDS ?= 20
fuzz-smoke:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ=1 OPT=-O1 fuzzers
	@./tests/fuzz/run.sh build/fuzz smoke

fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ=1 OPT=-O1 fuzzers
	@./tests/fuzz/run.sh build/fuzz long

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
