/* libFuzzer target for the JSON-lines decoder: the CSV target's driver with
 * FMT_JSON (see fuzz_csv.c). */
#define FUZZ_KIND FMT_JSON
#include "tests/fuzz/fuzz_csv.c"
