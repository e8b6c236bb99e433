// Harness self-test: a C case with an extra source and flags.
// guest-sources: ../cases-lib/helper.c
// guest-cflags: -DSELFTEST_VALUE=42
// guest-timeout: 30
#include <stdio.h>
#include <unistd.h>

int helper(void);

int main(void)
{
	printf("ok 1 - compiled with extra source (helper=%d)\n", helper());
	printf("%s 2 - flag from guest-cflags\n", SELFTEST_VALUE == 42 ? "ok" : "not ok");
	printf("ok 3 - a skipped check # SKIP not here\n");
	printf("plain output line\n");
	return 0;
}
