/* hot.h - the verifier's per-value loops: drawing inputs (rng.c) and
 * comparing outputs (numeric.c). Every checked and timed call runs them
 * over millions of values.
 *
 * HOT marks a loop's inner steps, inlined where the compiler would not
 * inline on its own (at -O1, or into a function of other sanitizer
 * attributes). HOT_LOOP marks a loop over whole buffers, kept out of line.
 *
 * The sanitizer build's library is compiled with KILN_HOT_UNCHECKED: there
 * HOT and HOT_LOOP code is not instrumented, and the caller of a HOT_LOOP
 * checks each buffer the loop reads or writes, whole, once
 * (kiln_hot_region); the two files are built at -O2 there, as in the
 * normal build (common/CMakeLists.txt). Instrumented, these loops ran three times slower than
 * the normal build's and took a fifth of the sanitizer suite's CPU
 * (docs/decisions.md, 2026-12-02). The unit tests of these loops
 * (unit_numeric, unit_rng) compile rng.c and numeric.c again without
 * KILN_HOT_UNCHECKED, so every element of their data, which drives each
 * branch, is still checked by both sanitizers. */
#ifndef KILN_HOT_H
#define KILN_HOT_H

#include <stddef.h>

#if defined(KILN_HOT_UNCHECKED)
#define KILN_HOT_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define KILN_HOT_NO_SANITIZE
#endif

#define HOT static inline __attribute__((always_inline)) KILN_HOT_NO_SANITIZE
#define HOT_LOOP static __attribute__((noinline)) KILN_HOT_NO_SANITIZE

#if defined(KILN_HOT_UNCHECKED) && defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

/* The bytes [p, p + len) are all addressable, or AddressSanitizer reports
 * the first that is not, as it would for the loop's own access, and stops:
 * the read below is instrumented (this function is not a HOT one). */
static inline void kiln_hot_region(const void *p, size_t len)
{
    const volatile char *bad = __asan_region_is_poisoned((void *)p, len);
    if (bad)
        (void)*bad;
}
#else
static inline void kiln_hot_region(const void *p, size_t len)
{
    (void)p;
    (void)len;
}
#endif

#endif
