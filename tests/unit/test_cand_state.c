/* test_cand_state.c - the candidate state machine (harness/cand_state.c):
 * names round-trip, the search's moves are allowed, nothing else is. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cand_state.h"

static void test_names(void **state)
{
    (void)state;
    for (int s = 0; s < KILN_CAND_NSTATES; s++)
        assert_int_equal(kiln_cand_state_parse(kiln_cand_state_name((kiln_cand_state)s)), s);
    assert_int_equal(kiln_cand_state_parse("kept"), -1);
    assert_int_equal(kiln_cand_state_parse(NULL), -1);
    assert_string_equal(kiln_cand_state_name(KILN_CAND_NSTATES), "?");
}

static void test_moves(void **state)
{
    (void)state;
    static const int allowed[][2] = {
        {KILN_CAND_PROPOSED, KILN_CAND_VERIFIED}, {KILN_CAND_PROPOSED, KILN_CAND_DECIDED},
        {KILN_CAND_VERIFIED, KILN_CAND_CONFIRMED}, {KILN_CAND_VERIFIED, KILN_CAND_DECIDED},
        {KILN_CAND_CONFIRMED, KILN_CAND_DECIDED}, {KILN_CAND_DECIDED, KILN_CAND_COMMITTED},
        {KILN_CAND_COMMITTED, KILN_CAND_DONE},
    };
    int n = 0;
    for (int a = 0; a < KILN_CAND_NSTATES; a++)
        for (int b = 0; b < KILN_CAND_NSTATES; b++) {
            int want = 0;
            for (size_t k = 0; k < sizeof allowed / sizeof allowed[0]; k++)
                want |= allowed[k][0] == a && allowed[k][1] == b;
            assert_int_equal(kiln_cand_state_allowed((kiln_cand_state)a, (kiln_cand_state)b), want);
            n += want;
        }
    assert_int_equal(n, 7);
    assert_false(kiln_cand_state_allowed(KILN_CAND_DONE, KILN_CAND_PROPOSED));   /* no going back */
    assert_false(kiln_cand_state_allowed((kiln_cand_state)-1, KILN_CAND_DONE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
