# Makefile - builds libsuperpage, the superpage CLI and its bench, the tests and the first benchmark.
# make | make check [SANITIZE=1] [DEBUG=1] | make check-docs | make bench (writes doc/BENCHMARKS.md) | make install PREFIX=... DESTDIR=... | make deb

SHELL := /bin/bash

ifeq ($(origin CC),default)
CC := gcc
endif
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(PREFIX)/bin
# LIBDIR may be a multiarch one (the Debian package: LIBDIR=/usr/lib/x86_64-linux-gnu).
LIBDIR ?= $(PREFIX)/lib
# The command finds its own files from where it is (src/cli/run.c, src/cli/bench.c): the
# runtime in ../lib or ../lib/superpage, the bench kernels in ../lib/superpage; so these
# stay under $(PREFIX)/lib whatever LIBDIR is. The package puts the runtime, which is
# no library to link with, in /usr/lib/superpage (RUNTIMEDIR=/usr/lib/superpage).
RUNTIMEDIR ?= $(PREFIX)/lib
PKGLIBDIR ?= $(PREFIX)/lib/superpage
INCDIR = $(PREFIX)/include
MANDIR = $(PREFIX)/share/man
PCDIR = $(LIBDIR)/pkgconfig
# superpage.pc's libdir: under its prefix where it is (${exec_prefix}/lib), else as given.
PC_LIBDIR = $(patsubst $(PREFIX)/%,$${exec_prefix}/%,$(LIBDIR))
# The boot unit that sets the persisted pools (a Debian package: UNITDIR=/lib/systemd/system).
UNITDIR ?= $(PREFIX)/lib/systemd/system
# libhugetlbfs.so.0 and its header go where no distribution's copy is: programs find
# them by LD_LIBRARY_PATH, -L and -I (superpage-libhugetlbfs(7)).
HTLB_LIBDIR = $(PKGLIBDIR)/libhugetlbfs
HTLB_INCDIR = $(INCDIR)/superpage/libhugetlbfs

VERSION := $(shell sed -n 's/^\#define SP_VERSION_STRING "\(.*\)"/\1/p' include/superpage.h)
SONAME := libsuperpage.so.0

SANITIZE ?= 0
# DEBUG=1: the invariants switched on (src/runtime/say/debug.h): sp_assert, the lock
# ranks of life.c's order, each room's checker as its lock is released; in a build
# directory of its own.
DEBUG ?= 0
DBG_DIR := $(if $(filter 1,$(DEBUG)),-debug)
ifeq ($(SANITIZE),1)
B ?= build/san$(DBG_DIR)
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-DSP_SANITIZE
else
B ?= build$(if $(DBG_DIR),/debug)
SAN :=
endif
DBG := $(if $(DBG_DIR),-DSP_DEBUG)
# In DEBUG every runtime file has debug.h first: its mutex calls are the ranked ones.
RT_DBG := $(if $(DBG_DIR),-include src/runtime/say/debug.h)

CFLAGS ?= -O2 -g
# SP_HARDEN=0: the runtime's free lists without their hardening (src/runtime/malloc/malloc.h),
# only for bench/compare.sh to measure its cost (make bench builds it in $(B)/unhardened).
SP_HARDEN ?= 1
HARDEN := $(if $(filter 0,$(SP_HARDEN)),-DSP_HARDEN=0)
WARN := -Wall -Wextra -Wshadow -Wno-missing-field-initializers
# -MMD: each object's headers are listed beside it (X.d), read back below.
DEPS := -MMD -MP
ALL_CFLAGS := -std=gnu11 $(CPPFLAGS) $(CFLAGS) $(HARDEN) $(DBG) $(WARN) $(SAN) $(DEPS) -fPIC -D_GNU_SOURCE -Iinclude
# The core's own header (internal.h, os.h): for the core, the runtime and the unit tests,
# not for the command, which asks the core through superpage.h.
CORE_INC := -Isrc/core
ALL_LDFLAGS := $(LDFLAGS) $(SAN)
LIBS := -lpthread

CORE_SRC := $(wildcard src/core/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
BENCH_SRC := $(wildcard src/bench/*.c)
RT_SRC := $(wildcard src/runtime/*.c src/runtime/*/*.c)
HTLB_SRC := $(wildcard src/htlb/*.c)
# What the parts share (src/common): preload.c, LD_PRELOAD with the runtime in front
# (the command and libhugetlbfs.so.0); json.c, the JSON writer (the command and the bench).
COMMON_SRC := $(wildcard src/common/*.c)
RT_CORE_SRC := $(filter-out src/runtime/malloc/interpose.c src/runtime/program/mmap.c \
	src/runtime/program/mremap.c src/runtime/program/libc_syscall.c \
	src/runtime/program/userns.c,$(RT_SRC))
RTEST_SRC := $(wildcard tests/runtime/*/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_HELP := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))
SYS_SRC := $(wildcard tests/system/test_*.c)
HELPER_SRC := $(wildcard tests/cli/*.c)

CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
BENCH_OBJ := $(BENCH_SRC:%.c=$(B)/obj/%.o)
RT_OBJ := $(RT_SRC:%.c=$(B)/obj/%.o)
COMMON_OBJ := $(COMMON_SRC:%.c=$(B)/obj/%.o)
PRELOAD_OBJ := $(B)/obj/src/common/preload.o
JSON_OBJ := $(B)/obj/src/common/json.o
HTLB_OBJ := $(HTLB_SRC:%.c=$(B)/obj/%.o) $(PRELOAD_OBJ)
RT_CORE_OBJ := $(RT_CORE_SRC:%.c=$(B)/obj/%.o)
RTEST_LIB_SRC := $(wildcard tests/runtime/*/lib/*.c)
RTEST_BIN := $(RTEST_SRC:%.c=$(B)/%) $(B)/tests/runtime/text/textuse-plain \
	$(RTEST_LIB_SRC:%.c=$(B)/%.so) $(B)/tests/runtime/interplay/deepbind-runpath
UNIT_HELP_OBJ := $(UNIT_HELP:%.c=$(B)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:%.c=$(B)/%)
SYS_BIN := $(SYS_SRC:%.c=$(B)/%)
HELPER_BIN := $(HELPER_SRC:%.c=$(B)/%)

LIB_A := $(B)/libsuperpage.a
BENCH_A := $(B)/libsuperpage-bench.a
RT_SO := $(B)/libsuperpage-run.so
RT_A := $(B)/libsuperpage-rt-test.a
LIB_SO := $(B)/$(SONAME)
CLI := $(B)/superpage
HTLB_DIR := $(B)/libhugetlbfs
HTLB_SO := $(HTLB_DIR)/libhugetlbfs.so.0
HTLB_INC := -Isrc/htlb -Isrc/htlb/include
MALLOCBENCH := $(B)/bench/kernels/malloc
KERNEL_SRC := $(wildcard bench/kernels/*.c)
KERNEL_BIN := $(KERNEL_SRC:bench/kernels/%.c=$(B)/bench/kernels/%)
IDEAL_BIN := $(KERNEL_SRC:bench/kernels/%.c=$(B)/bench/ideal/%)
KERNEL_CFLAGS := -std=gnu11 -O2 -g $(WARN) $(DEPS) -D_GNU_SOURCE -Ibench

all: $(CLI) $(LIB_SO) $(B)/libsuperpage.so $(LIB_A) $(RT_SO) $(HTLB_SO) $(HTLB_DIR)/libhugetlbfs.so

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/obj/src/core/%.o: src/core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) -c -o $@ $<

$(B)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) -c -o $@ $<

# The runtime lives inside other programs: its TLS is initial-exec (it is preloaded at
# start), and it exports nothing but the calls it interposes (src/runtime/libsuperpage-run.map;
# hidden by default, so that its own globals are reached without the GOT).
$(B)/obj/src/runtime/%.o: src/runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) -Isrc/runtime $(RT_DBG) -ftls-model=initial-exec -fvisibility=hidden -c -o $@ $<

$(RT_SO): $(RT_OBJ) $(CORE_OBJ) src/runtime/libsuperpage-run.map
	$(CC) -shared $(ALL_LDFLAGS) -Wl,--version-script=src/runtime/libsuperpage-run.map -Wl,-z,nodelete -Wl,-z,defs \
		-o $@ $(RT_OBJ) $(CORE_OBJ) $(LIBS)

# libhugetlbfs.so.0: libhugetlbfs' interface (src/htlb) on the core, linked in; only
# the interface's names are exported, under libhugetlbfs' version nodes
# (src/htlb/libhugetlbfs.map), so that programs linked against libhugetlbfs run on it.
$(B)/obj/src/htlb/%.o: src/htlb/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) $(HTLB_INC) -Isrc/common -fvisibility=hidden -c -o $@ $<

$(B)/obj/src/common/%.o: src/common/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -c -o $@ $<

$(HTLB_SO): $(HTLB_OBJ) $(CORE_OBJ) src/htlb/libhugetlbfs.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libhugetlbfs.so.0 $(ALL_LDFLAGS) \
		-Wl,--version-script=src/htlb/libhugetlbfs.map -Wl,-z,defs \
		-o $@ $(HTLB_OBJ) $(CORE_OBJ) $(LIBS)

# What -lhugetlbfs finds when a program is linked.
$(HTLB_DIR)/libhugetlbfs.so: $(HTLB_SO)
	ln -sf libhugetlbfs.so.0 $@

$(RT_A): $(RT_CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LIB_A): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LIB_SO): $(CORE_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/libsuperpage.so: $(LIB_SO)
	ln -sf $(SONAME) $@

# The command is linked statically (not under the sanitizers, which cannot be):
# superpage run starts before every program it runs, and a static start is faster.
CLI_STATIC := $(if $(SAN),,-static)
$(CLI): $(CLI_OBJ) $(COMMON_OBJ) $(BENCH_A) $(LIB_A)
	$(CC) $(ALL_LDFLAGS) $(CLI_STATIC) -o $@ $(CLI_OBJ) $(COMMON_OBJ) $(BENCH_A) $(LIB_A) $(LIBS) -lm

# The command's objects find the bench's header (src/bench/bench.h) as "bench.h".
$(B)/obj/src/cli/%.o: src/cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc/bench -Isrc/common -c -o $@ $<

# superpage bench as a part of its own: the kernel table, plan, runner, judge, stats and
# one writer per format, linked by the command and the unit tests. Its JSON writer
# uses the one the command uses too (src/common/json.c), held in the archive.
$(BENCH_A): $(BENCH_OBJ) $(JSON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/tests/unit/%: tests/unit/%.c $(UNIT_HELP_OBJ) $(LIB_A) $(RT_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) $(ALL_LDFLAGS) -Itests -Isrc/runtime -o $@ $< $(UNIT_HELP_OBJ) $(RT_A) $(LIB_A) $(LIBS)

# The libhugetlbfs interface on the fake kernel: its objects linked in, not the library.
$(B)/tests/unit/test_htlb: tests/unit/test_htlb.c $(UNIT_HELP_OBJ) $(HTLB_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CORE_INC) $(HTLB_INC) $(ALL_LDFLAGS) -Itests -o $@ $< \
		$(UNIT_HELP_OBJ) $(HTLB_OBJ) $(LIB_A) $(LIBS)

# The bench's readers and writers are tested apart from the command.
$(B)/tests/unit/test_benchout: tests/unit/test_benchout.c $(BENCH_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests -Isrc/bench -o $@ $< $(BENCH_A) $(LIB_A) $(LIBS) -lm

$(B)/tests/system/%: tests/system/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests -o $@ $< $(LIB_A) $(LIBS)

$(B)/tests/cli/%: tests/cli/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests -o $@ $< $(LIB_A) $(LIBS)

# Programs run under superpage run (tests/runtime/FEATURE/*.c, and common/ for those
# several features or bench/compare.sh run): plain C, no superpage calls (they must
# not be sanitized: ASan brings its own malloc and cannot be preloaded behind ours).
RTEST_CFLAGS := -std=gnu11 -O2 -g $(WARN) $(DEPS) -D_GNU_SOURCE -Itests/runtime/common
$(B)/tests/runtime/%: tests/runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(RTEST_CFLAGS) -o $@ $< -lpthread -lm $(RTEST_LD)

# Libraries those programs load (dlopen, LD_PRELOAD), as plain as they are.
$(B)/tests/runtime/%.so: tests/runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(RTEST_CFLAGS) -shared -fPIC -o $@ $< -lpthread

# deepbind-runpath finds its library by its RUNPATH ($ORIGIN/lib), as glibc's dlopen
# reads it from the caller it sees: the program's, through the runtime's dlopen.
$(B)/tests/runtime/interplay/deepbind-runpath: tests/runtime/interplay/deepbind.c
	@mkdir -p $(dir $@)
	$(CC) $(RTEST_CFLAGS) -o $@ $< -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/lib'

# textuse's segments are 2 MiB-aligned, as superpage-run(7) tells users to link for
# --text; textuse-plain is the same program linked as usual.
$(B)/tests/runtime/text/textuse: RTEST_LD = -Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152
$(B)/tests/runtime/text/textuse-plain: tests/runtime/text/textuse.c
	@mkdir -p $(dir $@)
	$(CC) $(RTEST_CFLAGS) -o $@ $< -ldl

# The benchmark kernels: plain programs (unsanitized, run under superpage run), and the
# same sources built as the "ideal", their arrays from strict sp_alloc (bench/kernel.h).
$(B)/bench/kernels/%: bench/kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) -o $@ $< -lpthread -lm

$(B)/bench/ideal/%: bench/kernels/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) $(SAN) -DBENCH_IDEAL -Iinclude -o $@ $< $(LIB_A) -lpthread -lm

# The itlb kernel (x86-64 only): bench/itlbgen writes its text, 16 MiB: 4096 short
# straight-line functions, a 4 KiB page each, their entries on different cache lines (a
# call finds its code in the caches but its page not in the instruction TLB); the driver
# calls them. Linked for 2 MiB pages, so that the text segment is 2 MiB-aligned and
# superpage run --text can move nearly all of it (all but the last page, which follows
# the C start-up code); itlb-unaligned is the same linked as usual.
ITLB_X86 := $(filter x86_64-%,$(shell $(CC) -dumpmachine))
ITLB_BIN := $(if $(ITLB_X86),$(B)/bench/kernels/itlb $(B)/bench/itlb/itlb-unaligned)
ITLB_ALIGN := -Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152

$(B)/bench/itlb/itlbgen: bench/itlbgen.c bench/itlb/itlb.h
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) -o $@ $<

$(B)/bench/itlb/text.o: $(B)/bench/itlb/itlbgen
	$< 4096 4096 2 >$(B)/bench/itlb/text.s
	$(CC) -c -o $@ $(B)/bench/itlb/text.s

$(B)/bench/itlb/driver.o: bench/itlb/driver.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) -c -o $@ $<

# The text first: only the C start-up code comes before it in the segment.
$(B)/bench/kernels/itlb: $(B)/bench/itlb/text.o $(B)/bench/itlb/driver.o
	@mkdir -p $(dir $@)
	$(CC) $(ITLB_ALIGN) -o $@ $^

$(B)/bench/itlb/itlb-unaligned: $(B)/bench/itlb/text.o $(B)/bench/itlb/driver.o
	$(CC) -o $@ $^

kernels: $(KERNEL_BIN) $(IDEAL_BIN) $(ITLB_BIN)
ifeq ($(ITLB_X86),)
	@echo "kernels: itlb skipped: its generated text is x86-64 assembly"
endif

tests: all kernels $(UNIT_BIN) $(SYS_BIN) $(HELPER_BIN) $(RTEST_BIN)

check: tests
	@bash tests/run.sh $(B)

# The unit tier alone: no root needed, seconds (tests/run.sh runs one tier or test).
check-unit: $(UNIT_BIN)
	@bash tests/run.sh $(B) unit

# The docs hold together: every link of the Markdown files, every path and page the man
# pages name (tests/check_docs.py; make check runs it too, in tests/cli/test_docs.sh).
check-docs:
	@python3 tests/check_docs.py

# The runtime tier alone: programs under superpage run (it takes the pool lock itself).
check-runtime: tests
	@bash tests/run.sh $(B) runtime

# The main job: every kernel under each backing, pools set up for it and put back; the
# results, the machine and the date go to doc/BENCHMARKS.md (bench/benchmarks.py).
bench: all kernels unhardened $(B)/tests/runtime/common/gups_malloc $(B)/tests/runtime/common/sweep
	@mkdir -p $(B)/bench
	set -o pipefail; $(CLI) bench --quick --setup-pools --json $(B)/bench/report.json \
		--csv $(B)/bench/report.csv --svg $(B)/bench/report.svg | tee $(B)/bench/report.txt
	set -o pipefail; bash bench/compare.sh $(B) --quick | tee $(B)/bench/malloc.txt
	$(CLI) status --json >$(B)/bench/status.json
	cp $(B)/bench/report.svg doc/bench.svg
	python3 bench/benchmarks.py --json $(B)/bench/report.json --text $(B)/bench/report.txt \
		--malloc $(B)/bench/malloc.txt --status $(B)/bench/status.json --svg bench.svg \
		--command 'make bench' --command '# which runs:' \
		--command '$(CLI) bench --quick --setup-pools --json $(B)/bench/report.json ...' \
		--command 'bash bench/compare.sh $(B) --quick' --out doc/BENCHMARKS.md
	@echo "bench: wrote doc/BENCHMARKS.md and doc/bench.svg"

# The command and the runtime with the hardening compiled out, beside the build, for
# bench/compare.sh's row of what the hardening costs.
unhardened:
	$(MAKE) SP_HARDEN=0 B=$(B)/unhardened $(B)/unhardened/superpage $(B)/unhardened/libsuperpage-run.so

# Real programs, plain and under superpage run in each mode (tests/compat/run.sh --help);
# make compat ONLY=redis,java MODES=auto,2m runs a part.
compat: all
	@bash tests/compat/run.sh $(if $(ONLY),--only $(ONLY)) $(if $(MODES),--modes $(MODES)) $(B)

.PHONY: compat

# Real programs' own speed (bench/real/realbench.sh --help): the quick set, or with
# FULL=1 the full one; ROUNDS=3 for a shorter run, ONLY=redis,sqlite for a part; PEERS=1
# with the peers beside (SYSFS=1: THP 'always' too, as root). Writes its section of
# doc/BENCHMARKS.md.
realbench: all
	@bash bench/real/realbench.sh $(if $(FULL),--full) $(if $(ROUNDS),--rounds $(ROUNDS)) \
		$(if $(ONLY),--only $(ONLY)) $(if $(NOTE),--note "$(NOTE)") \
		$(if $(PEERS),--peers) $(if $(SYSFS),--allow-sysfs) $(B)

.PHONY: realbench

install: all kernels
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(PCDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(MANDIR)/man8
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/superpage
	# libhugetlbfs' programs are superpage run by these names (src/cli/main.c); the
	# plain hugectl and hugeadm are left to the user, where no distribution has them
	ln -sf superpage $(DESTDIR)$(BINDIR)/superpage-hugectl
	ln -sf superpage $(DESTDIR)$(BINDIR)/superpage-hugeadm
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/$(SONAME)
	install -d $(DESTDIR)$(RUNTIMEDIR)
	install -m 755 $(RT_SO) $(DESTDIR)$(RUNTIMEDIR)/libsuperpage-run.so
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsuperpage.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libsuperpage.a
	install -m 644 include/superpage.h $(DESTDIR)$(INCDIR)/superpage.h
	# the prefix is the one given to make install, whatever make all was given
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(PC_LIBDIR)|g' -e 's|@VERSION@|$(VERSION)|g' superpage.pc.in \
		>$(DESTDIR)$(PCDIR)/superpage.pc
	chmod 644 $(DESTDIR)$(PCDIR)/superpage.pc
	install -m 644 man/superpage.1 $(DESTDIR)$(MANDIR)/man1/superpage.1
	install -m 644 man/superpage.3 $(DESTDIR)$(MANDIR)/man3/superpage.3
	install -m 644 man/superpage-run.7 $(DESTDIR)$(MANDIR)/man7/superpage-run.7
	install -m 644 man/superpage-libhugetlbfs.7 $(DESTDIR)$(MANDIR)/man7/superpage-libhugetlbfs.7
	install -m 644 man/superpage-hugectl.8 $(DESTDIR)$(MANDIR)/man8/superpage-hugectl.8
	install -m 644 man/superpage-hugeadm.8 $(DESTDIR)$(MANDIR)/man8/superpage-hugeadm.8
	install -d $(DESTDIR)$(HTLB_LIBDIR) $(DESTDIR)$(HTLB_INCDIR)
	install -m 755 $(HTLB_SO) $(DESTDIR)$(HTLB_LIBDIR)/libhugetlbfs.so.0
	ln -sf libhugetlbfs.so.0 $(DESTDIR)$(HTLB_LIBDIR)/libhugetlbfs.so
	install -m 644 src/htlb/include/hugetlbfs.h $(DESTDIR)$(HTLB_INCDIR)/hugetlbfs.h
	install -d $(DESTDIR)$(PKGLIBDIR)/kernels $(DESTDIR)$(PKGLIBDIR)/ideal
	install -m 755 $(KERNEL_BIN) $(filter %/kernels/itlb,$(ITLB_BIN)) \
		$(DESTDIR)$(PKGLIBDIR)/kernels/
	install -m 755 $(IDEAL_BIN) $(DESTDIR)$(PKGLIBDIR)/ideal/
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|@BINDIR@|$(BINDIR)|g' dist/superpage-pools.service.in \
		>$(DESTDIR)$(UNITDIR)/superpage-pools.service
	chmod 644 $(DESTDIR)$(UNITDIR)/superpage-pools.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/superpage $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(BINDIR)/superpage-hugectl $(DESTDIR)$(BINDIR)/superpage-hugeadm \
		$(DESTDIR)$(MANDIR)/man8/superpage-hugectl.8 $(DESTDIR)$(MANDIR)/man8/superpage-hugeadm.8 \
		$(DESTDIR)$(LIBDIR)/libsuperpage.so $(DESTDIR)$(LIBDIR)/libsuperpage.a \
		$(DESTDIR)$(RUNTIMEDIR)/libsuperpage-run.so \
		$(DESTDIR)$(INCDIR)/superpage.h $(DESTDIR)$(PCDIR)/superpage.pc \
		$(DESTDIR)$(MANDIR)/man1/superpage.1 $(DESTDIR)$(MANDIR)/man3/superpage.3 \
		$(DESTDIR)$(MANDIR)/man7/superpage-run.7 \
		$(DESTDIR)$(UNITDIR)/superpage-pools.service \
		$(DESTDIR)$(MANDIR)/man7/superpage-libhugetlbfs.7
	rm -rf $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(INCDIR)/superpage

# The Debian packages (debian/README.source): dpkg-buildpackage writes them beside the
# repository; they are moved into $(B)/deb (with the .changes and .buildinfo), and what
# the build left in debian/ is cleaned. debian/rules is a makefile of its own: this
# make's command line (B=..., in MAKEFLAGS) must not reach it.
DEB_ENV := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: needs dpkg-buildpackage and debhelper (apt-get install debhelper)" >&2; exit 1; }
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || \
		{ echo "make deb: debian/changelog is at $$v, include/superpage.h at $(VERSION)" >&2; exit 1; }
	$(DEB_ENV) dpkg-buildpackage -us -uc -b -jauto
	rm -rf $(B)/deb
	mkdir -p $(B)/deb
	set -e; for f in $$(cut -d' ' -f1 debian/files) \
		superpage_$(VERSION)_$$(dpkg-architecture -qDEB_HOST_ARCH).changes; do \
		mv ../$$f $(B)/deb/; done
	$(DEB_ENV) debian/rules clean
	@ls -1 $(B)/deb

clean:
	rm -rf build

.PHONY: all kernels unhardened tests check check-unit check-runtime check-docs bench install uninstall deb clean

# The headers each object and program was built from (-MMD), once it has been built.
-include $(shell find $(B) -name '*.d' 2>/dev/null)
.SECONDARY:
