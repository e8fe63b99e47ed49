/* rtc_includes.h - what a CUDA candidate may #include, checked on its text
 * before NVRTC sees it.
 *
 * NVRTC opens any path an #include names: `#include "/etc/passwd"` put the
 * file's first line into the compile log, which is the candidate's feedback.
 * So every #include, #include_next, #import and __has_include of the source
 * must name a header as <a/b.h> or "a/b.h": relative, components of
 * letters, digits, `_`, `-`, `+` and `.`, none of them `.` or `..`. Such a
 * name can only resolve to kiln's headers in memory or under CUDA's include
 * directories (the compiler child works in CUDA's, nvrtc_child.c). An
 * #include of a macro is refused, since its name is known only after
 * preprocessing. The scan ignores comments, strings and #if, so it may
 * refuse a directive that would never be read (text that looks like one),
 * never the reverse. The NVRTC child is also confined to CUDA's directories
 * by Landlock (nvrtc_child.c); this check gives the same rule where Landlock
 * is missing, and a message that says why. */
#ifndef KILN_RTC_INCLUDES_H
#define KILN_RTC_INCLUDES_H

#include <stddef.h>

/* 0 if every include of src is allowed; else -1 with msg set to
 * "NAME(LINE): error: ..." (NAME as the compile log names the source). */
int kiln_rtc_check_includes(const char *src, const char *name, char *msg, size_t len);

#endif
