# parser: re2c lexer + Lemon grammar + AST.  Generated sources live in $(BUILD)/parser.
parser_SRCS := parser/ast.c parser/print.c parser/driver.c
parser_GEN  := $(BUILD)/parser/grammar.c $(BUILD)/parser/lexer.c
parser_USES := base
UNIT_TESTS   += test_parser:parser
FUZZ_TARGETS += fuzz_parser:parser

# Lemon writes grammar.c and grammar.h in one run: one grouped rule.
$(BUILD)/parser/grammar.c $(BUILD)/parser/grammar.h &: parser/grammar.y
	@mkdir -p $(BUILD)/parser
	lemon -q -d$(BUILD)/parser -T/usr/share/lemon/lempar.c parser/grammar.y

$(BUILD)/parser/lexer.c: parser/lexer.re $(BUILD)/parser/grammar.h
	@mkdir -p $(@D)
	re2c -W --no-generation-date --no-version -o $@ $<

# Everything that includes grammar.h waits for it (safe under make -j).
$(patsubst %.c,$(BUILD)/%.o,$(parser_SRCS)) $(patsubst %.c,%.o,$(parser_GEN)): $(BUILD)/parser/grammar.h
$(BUILD)/tests/unit/test_parser.o $(BUILD)/tests/fuzz/fuzz_parser.o: $(BUILD)/parser/grammar.h
