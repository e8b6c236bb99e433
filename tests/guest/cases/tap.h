/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP output for the in-guest C test cases (tests/guest/cases/).
 *
 * Not a test case itself (the harness compiles *.c and runs executables).
 * Every case prints one result line per check and exits non-zero when any
 * check failed:
 *
 *   ok N - <name>
 *   not ok N - <name> # <reason>
 *
 * The guest's /init (tests/guest/init) turns them into "ok - <case>: <name>"
 * (it adds the case name and drops the number) and adds one line per case
 * for its exit status. The exact result-line format lives in TAP_LINE_OK
 * and TAP_LINE_NOT_OK below: adapting to another convention is a change
 * there.
 * Diagnostics are "# ..." lines. A check that cannot run is reported with
 * tap_skip() as a "# SKIP" diagnostic: it never prints "ok".
 *
 * Output is line-buffered so that forked children never duplicate buffered
 * lines; children must not call the tap_* functions (they report through
 * exit codes or shared memory).
 */
#ifndef HPCSCHED_TAP_H
#define HPCSCHED_TAP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The result-line convention (number, case, name, reason). */
#define TAP_LINE_OK(n, c, name)			"ok %d - %s\n", (n), (name)
#define TAP_LINE_NOT_OK(n, c, name, why)	"not ok %d - %s # %s\n", (n), (name), (why)

static int tap_count;
static int tap_failed;
static const char *tap_case = "case";

/* Call first in main(). @name: the case name used as prefix of each line. */
static inline void tap_init(const char *name)
{
	tap_case = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IONBF, 0);
}

static inline void tap_vresult(int pass, const char *why, const char *fmt,
			       va_list ap)
{
	char name[512];

	vsnprintf(name, sizeof(name), fmt, ap);
	tap_count++;
	if (pass) {
		printf(TAP_LINE_OK(tap_count, tap_case, name));
	} else {
		tap_failed++;
		printf(TAP_LINE_NOT_OK(tap_count, tap_case, name,
				       why && *why ? why : "failed"));
	}
	fflush(stdout);
}

/* One check: passes when @cond is true. Returns @cond. */
__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(cond, "failed", fmt, ap);
	va_end(ap);
	return cond;
}

/* One check with an explanation printed on failure. Returns @cond. */
__attribute__((format(printf, 3, 4)))
static inline int tap_check(int cond, const char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(cond, why, fmt, ap);
	va_end(ap);
	return cond;
}

/* A failed check whose reason is formatted: tap_fail("name", "got %d", x). */
__attribute__((format(printf, 2, 3)))
static inline void tap_fail(const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	tap_count++;
	tap_failed++;
	printf(TAP_LINE_NOT_OK(tap_count, tap_case, name, why));
	fflush(stdout);
}

/* A passed check: tap_pass("name %d", i). */
__attribute__((format(printf, 1, 2)))
static inline void tap_pass(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(1, NULL, fmt, ap);
	va_end(ap);
}

/* A check that could not run: a diagnostic, never an "ok". */
__attribute__((format(printf, 2, 3)))
static inline void tap_skip(const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("# SKIP %s: %s\n", name, why);
	fflush(stdout);
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* Last call of main(): prints the plan and returns the exit status. */
static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	printf("# %s: %d passed, %d failed\n", tap_case,
	       tap_count - tap_failed, tap_failed);
	fflush(stdout);
	if (tap_count == 0)
		return 2;	/* a case that checked nothing did not pass */
	return tap_failed ? 1 : 0;
}

#endif /* HPCSCHED_TAP_H */
