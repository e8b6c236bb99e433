// SPDX-License-Identifier: GPL-2.0
/*
 * The policy core must build unchanged everywhere it is used. Each test runs
 * a compiler on kernel/hpc-core/hpc_policy.c and hpc_smt.c and passes
 * only if it succeeds (warnings are errors):
 *
 *   bpf_*           clang-16 -target bpf -O2 -Wall -Werror, with
 *                   tools/include/hpc_bpf_types.h standing in for vmlinux.h and
 *                   HPC_API empty (the functions global, so kept); the
 *                   objects must not call anything outside themselves.
 *   strict_*        user space with the kernel's warning flags (gcc, clang).
 *   freestanding_*  user space, -ffreestanding -nostdinc: only the
 *                   compiler's own headers (<stdbool.h>, <stdint.h>) and the
 *                   kernel's UAPI headers (<linux/types.h>), no libc header;
 *                   no FP registers; no libc or libgcc symbol in the object.
 *   kernel_*        the __KERNEL__ branch of hpc_types.h against stand-in
 *                   <linux/types.h> and <linux/math64.h> (tests/unit/kstub),
 *                   kernel flags, -m32: 64-bit division only through
 *                   div64_u64(), as a 32-bit kernel requires.
 *   bpf_api         the core's API as a BPF program sees it is its headers':
 *                   built for BPF with HPC_API empty, the objects define
 *                   exactly the functions that the headers, preprocessed for
 *                   BPF, declare with HPC_API (hpc_types.h); and as scx_hpc
 *                   builds them (HPC_API static, unused ones dropped), not
 *                   one function has external linkage.
 */
#include "hpc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* The kernel's warnings (Makefile, scripts/Makefile.extrawarn W=1). */
#define KERNEL_WARNINGS							\
	"-std=gnu11 -Wall -Wextra -Wdeclaration-after-statement "	\
	"-Wstrict-prototypes -Wmissing-prototypes "			\
	"-Wmissing-declarations -Wold-style-definition -Wundef -Wvla "	\
	"-Werror"

static void need_tool(const char *name, const char *path)
{
	if (!path[0])
		fail_msg("%s not found when the build was configured", name);
}

/*
 * Run the shell command built from @fmt, its output going to @log; print the
 * command and its output if it fails. Returns the exit status.
 */
static int run(const char *log, const char *fmt, ...)
{
	char cmd[4096], line[512];
	va_list ap;
	FILE *f;
	int rc, n;

	mkdir(HPC_TEST_OUT, 0777);
	va_start(ap, fmt);
	cmd[0] = '(';
	n = vsnprintf(cmd + 1, sizeof(cmd) - 256, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && n < (int)sizeof(cmd) - 256);
	snprintf(cmd + 1 + n, sizeof(cmd) - 1 - n, ") >'%s' 2>&1", log);
	rc = system(cmd);
	rc = rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
	if (rc) {
		print_message("# $ %s\n# exit status %d\n", cmd, rc);
		f = fopen(log, "r");
		while (f && fgets(line, sizeof(line), f))
			print_message("# %s", line);
		if (f)
			fclose(f);
	}
	return rc;
}

/* Compile @src with @cc and @flags into HPC_TEST_OUT/@tag-@src.o. */
static int compile(const char *tag, const char *cc, const char *flags,
		   const char *src)
{
	char log[512];

	snprintf(log, sizeof(log), "%s/%s-%s.log", HPC_TEST_OUT, tag, src);
	return run(log, "'%s' %s -c '%s/%s.c' -o '%s/%s-%s.o'", cc, flags,
		   HPC_CORE_SRC, src, HPC_TEST_OUT, tag, src);
}

/*
 * The undefined symbols of HPC_TEST_OUT/@tag-@src.o, except those listed in
 * @allowed (an extended regexp, or NULL), must be none.
 */
static int no_foreign_symbols(const char *tag, const char *src,
			      const char *nm, const char *allowed)
{
	char log[512];

	snprintf(log, sizeof(log), "%s/%s-%s.nm", HPC_TEST_OUT, tag, src);
	return run(log, "undef=$('%s' -u '%s/%s-%s.o' | awk '{print $NF}' | "
		   "grep -Ev '^(%s)$'); [ -z \"$undef\" ] || "
		   "{ echo \"undefined symbols: $undef\"; exit 1; }",
		   nm, HPC_TEST_OUT, tag, src,
		   allowed ? allowed : "_GLOBAL_OFFSET_TABLE_");
}

struct check {
	const char *tag;	/* test name prefix and object file tag */
	const char *tool;	/* what to call the compiler in a message */
	const char *cc;
	const char *flags;
	const char *nm;		/* NULL: no symbol check */
	const char *allowed;	/* undefined symbols allowed (regexp) */
};

#define BPF_FLAGS							\
	"-target bpf -O2 -g -Wall -Werror "				\
	"-include '" HPC_BPF_TYPES "'"

#define GCC_INCLUDE	"'" HPC_GCC "' -print-file-name=include"
#define CLANG_INCLUDE	"echo \"$('" HPC_CLANG "' -print-resource-dir)/include\""

#define FREESTANDING_FLAGS(cc_include)					\
	"-ffreestanding -nostdinc -isystem \"$(" cc_include ")\" "	\
	"-isystem '" HPC_UAPI_DIR "' -mgeneral-regs-only -fno-builtin "	\
	KERNEL_WARNINGS

#define KERNEL_FLAGS							\
	"-D__KERNEL__ -nostdinc -ffreestanding -fno-builtin "		\
	"-fno-strict-aliasing -fno-common -mgeneral-regs-only "	\
	"-I'" HPC_TEST_SRC "/kstub' " KERNEL_WARNINGS

/* User space links libgcc's PIC helper; the kernel calls div64_u64(). */
#define USER_SYMS	"_GLOBAL_OFFSET_TABLE_"
#define KERNEL_SYMS	"div64_u64|_GLOBAL_OFFSET_TABLE_"

static const struct check checks[] = {
	{ "bpf", "clang-16", HPC_CLANG, BPF_FLAGS " -DHPC_API=", HPC_LLVM_NM,
	  "" },
	{ "strict_gcc", "gcc", HPC_GCC, "-O2 " KERNEL_WARNINGS, NULL, NULL },
	{ "strict_clang", "clang-16", HPC_CLANG, "-O2 " KERNEL_WARNINGS,
	  NULL, NULL },
	{ "freestanding_gcc", "gcc", HPC_GCC,
	  "-O2 " FREESTANDING_FLAGS(GCC_INCLUDE), HPC_NM, USER_SYMS },
	{ "freestanding_gcc_O0", "gcc", HPC_GCC,
	  "-O0 " FREESTANDING_FLAGS(GCC_INCLUDE), HPC_NM, USER_SYMS },
	{ "freestanding_clang", "clang-16", HPC_CLANG,
	  "-O2 " FREESTANDING_FLAGS(CLANG_INCLUDE), HPC_NM, USER_SYMS },
	{ "kernel_gcc", "gcc", HPC_GCC, "-O2 " KERNEL_FLAGS, HPC_NM,
	  KERNEL_SYMS },
	{ "kernel_gcc_m32", "gcc", HPC_GCC, "-O2 -m32 " KERNEL_FLAGS, HPC_NM,
	  KERNEL_SYMS },
	{ "kernel_clang", "clang-16", HPC_CLANG, "-O2 " KERNEL_FLAGS, HPC_NM,
	  KERNEL_SYMS },
	{ "kernel_clang_m32", "clang-16", HPC_CLANG, "-O2 -m32 " KERNEL_FLAGS,
	  HPC_NM, KERNEL_SYMS },
};

#define NR_CHECKS	(sizeof(checks) / sizeof(checks[0]))

static const char * const srcs[] = { "hpc_policy", "hpc_smt" };

#define NR_SRCS		(sizeof(srcs) / sizeof(srcs[0]))

/* One test: one check of one source file; @state points to its index. */
static void build_check(void **state)
{
	unsigned int i = *(unsigned int *)*state;
	const struct check *c = &checks[i / NR_SRCS];
	const char *src = srcs[i % NR_SRCS];

	need_tool(c->tool, c->cc);
	if (c->nm)
		need_tool("nm", c->nm);
	if (compile(c->tag, c->cc, c->flags, src))
		fail_msg("%s: %s.c does not compile (output above)", c->tag, src);
	if (c->nm && no_foreign_symbols(c->tag, src, c->nm, c->allowed))
		fail_msg("%s: %s.o needs symbols from outside (output above)",
			 c->tag, src);
}

#define NM_DEFINED_FUNCS(obj)						\
	"'" HPC_LLVM_NM "' --defined-only --extern-only '" obj "' | "	\
	"awk '$2 ~ /^[Tt]$/ {print $3}'"

/*
 * The functions the headers declare with HPC_API are exactly those a BPF
 * build of the core defines (with HPC_API empty, so that they are global
 * and listed); with HPC_API as scx_hpc has it, none is global.
 */
static void bpf_api(void **state)
{
	char log[512];
	unsigned int i;

	(void)state;
	need_tool("clang-16", HPC_CLANG);
	need_tool("llvm-nm", HPC_LLVM_NM);
	for (i = 0; i < NR_SRCS; i++) {
		if (compile("bpf_api", HPC_CLANG, BPF_FLAGS " -DHPC_API=",
			    srcs[i]))
			fail_msg("bpf_api: %s.c does not compile with HPC_API "
				 "empty (output above)", srcs[i]);
	}
	snprintf(log, sizeof(log), "%s/bpf_api.log", HPC_TEST_OUT);
	if (run(log, "cd '" HPC_TEST_OUT "' && "
		"for h in '" HPC_CORE_SRC "'/*.h; do '" HPC_CLANG "' "
		BPF_FLAGS " -DHPC_API=HPC_API_MARK -E -P \"$h\"; done | "
		"tr '\\n' ' ' | tr ';' '\\n' | "
		"sed -n 's/.*HPC_API_MARK[^(]*[ *]\\(hpc_[a-z0-9_]*\\)(.*/\\1/p' | "
		"sort -u > api-header.txt && "
		"{ " NM_DEFINED_FUNCS("bpf_api-hpc_policy.o") "; "
		NM_DEFINED_FUNCS("bpf_api-hpc_smt.o") "; } | sort > api-bpf.txt && "
		"[ -s api-header.txt ] && "
		"{ diff api-header.txt api-bpf.txt || "
		"{ echo '< declared with HPC_API, not defined in BPF; "
		"> defined with external linkage in BPF, not declared with "
		"HPC_API'; exit 1; }; }"))
		fail_msg("bpf_api: the headers' API and the BPF objects' "
			 "functions differ (output above)");
	for (i = 0; i < NR_SRCS; i++) {
		if (compile("bpf_static", HPC_CLANG,
			    BPF_FLAGS " -Wno-unused-function", srcs[i]))
			fail_msg("bpf_api: %s.c does not compile for BPF "
				 "(output above)", srcs[i]);
		snprintf(log, sizeof(log), "%s/bpf_static-%s.nm",
			 HPC_TEST_OUT, srcs[i]);
		if (run(log, "set -e; test -s '%s/bpf_static-%s.o'; "
			"f=$(" NM_DEFINED_FUNCS("%s/bpf_static-%s.o") "); "
			"[ -z \"$f\" ] || { echo \"external: $f\"; exit 1; }",
			HPC_TEST_OUT, srcs[i], HPC_TEST_OUT, srcs[i]))
			fail_msg("bpf_api: %s.c has functions with external "
				 "linkage in BPF (output above)", srcs[i]);
	}
}

int main(void)
{
	static struct CMUnitTest tests[NR_CHECKS * NR_SRCS + 1];
	static unsigned int idx[NR_CHECKS * NR_SRCS];
	static char names[NR_CHECKS * NR_SRCS][64];
	unsigned int i;

	for (i = 0; i < NR_CHECKS * NR_SRCS; i++) {
		idx[i] = i;
		snprintf(names[i], sizeof(names[i]), "%s_%s",
			 checks[i / NR_SRCS].tag, srcs[i % NR_SRCS]);
		tests[i].name = names[i];
		tests[i].test_func = build_check;
		tests[i].setup_func = NULL;
		tests[i].teardown_func = NULL;
		tests[i].initial_state = &idx[i];
	}
	tests[i].name = "bpf_api";
	tests[i].test_func = bpf_api;
	tests[i].setup_func = NULL;
	tests[i].teardown_func = NULL;
	tests[i].initial_state = NULL;
	return _cmocka_run_group_tests("build", tests, NR_CHECKS * NR_SRCS + 1,
				       NULL, NULL);
}
