# taskfs build. `make` builds build/taskfs; `make test` runs every test;
# `make run` mounts the default store; `make bench` runs the benchmarks;
# `make install` / `make uninstall` (PREFIX, DESTDIR); `make deb`.

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc
PKG_CONFIG ?= pkg-config

PKGS := jansson libuv fuse3 libpcre2-8 libmicrohttpd
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS))

# The layers (docs/ARCHITECTURE.md, "Layers in the build"): the packages
# each folder's code may use, one line per library. A file compiles with the include
# flags of its folder's packages only, and the headers of every other
# package are poisoned for it (LAYER_POISON below: on Debian uv.h, pcre2.h
# and microhttpd.h sit in /usr/include, where no missing -I keeps them
# out), so core including <uv.h> fails to build. A folder not listed here
# (tests, bench, fuzz) gets every package.
PKGS.core := jansson
PKGS.supervisor := jansson libuv
PKGS.live := jansson libuv
PKGS.fs := jansson libuv fuse3
PKGS.mcp := jansson libuv libpcre2-8
PKGS.http := jansson libuv libpcre2-8 libmicrohttpd
PKGS.cli := jansson libuv
# The headers by which a package is reached, for the poison.
PKG_HEADERS.jansson := jansson.h
PKG_HEADERS.libuv := uv.h
PKG_HEADERS.fuse3 := fuse.h fuse_lowlevel.h fuse3/fuse.h fuse3/fuse_lowlevel.h
PKG_HEADERS.libpcre2-8 := pcre2.h
PKG_HEADERS.libmicrohttpd := microhttpd.h

OPT ?= -O2
CFLAGS ?= $(OPT) -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -fno-strict-aliasing -fPIC
# WERROR=1 (CI: .ci/run) makes every warning an error; a plain make leaves
# them warnings, so a newer compiler's new warning never stops a user's build.
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif
CPPFLAGS += -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude -I.
LDLIBS += $(PKG_LIBS) -lpthread

LAYERS := $(patsubst PKGS.%,%,$(filter PKGS.%,$(.VARIABLES)))
LAYER_POISON = $(BUILD)/poison/$(1)
$(foreach l,$(LAYERS),$(eval LAYER_CFLAGS.$(l) := $(shell $(PKG_CONFIG) --cflags $(PKGS.$(l)))))
# The include flags of a source file (its top folder's layer, or every
# package).
src_cflags = $(if $(filter $(1),$(LAYERS)),-I$(call LAYER_POISON,$(1)) $(LAYER_CFLAGS.$(1)),$(PKG_CFLAGS))

CORE_SRC := $(sort $(wildcard core/*.c))
SUP_SRC := $(sort $(wildcard supervisor/*.c))
LIVE_SRC := $(sort $(wildcard live/*.c))
FS_SRC := $(sort $(wildcard fs/*.c))
MCP_SRC := $(sort $(wildcard mcp/*.c))
HTTP_SRC := $(sort $(wildcard http/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c))
# The faces' verbs: in taskfs-faces.so (FACES=plugin, the default: cli/faces.c
# loads it on demand), or linked into the binary (FACES=static).
CLI_FACE_SRC := cli/cmd_mount.c cli/cmd_umount.c cli/cmd_mcp.c cli/cmd_serve.c
CLI_CORE_SRC := $(filter-out $(CLI_FACE_SRC) cli/faces.c,$(CLI_SRC))
FACES ?= plugin
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_HELPERS := $(sort $(wildcard tests/helpers/*.c))

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

# Link order is the layers' (docs/ARCHITECTURE.md, "Layers"): the faces,
# then the live layer they sit on, the supervisor, core.
LIBS := $(BUILD)/libtaskfs-http.a $(BUILD)/libtaskfs-mcp.a $(BUILD)/libtaskfs-fs.a \
        $(BUILD)/libtaskfs-live.a $(BUILD)/libtaskfs-supervisor.a $(BUILD)/libtaskfs.a
TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BIN := $(BUILD)/taskfs
# The supervisor on its own (supervisor/bin/taskfs-supervise.c): what a
# start execs, linked against core and the supervisor only, so a start
# does not load the faces' stacks (FUSE, libmicrohttpd and GnuTLS, PCRE2)
# a second time. Installed in LIBEXECDIR/taskfs; the launcher finds it
# beside the binary (the build tree) or at ../libexec/taskfs/ from it.
SUPBIN := $(BUILD)/taskfs-supervise
# The srun prolog of a Slurm task's job (supervisor/bin/taskfs-slurm-prolog.c:
# it hands the job's id to the supervisor), libc only; installed and found
# as taskfs-supervise is.
PROLOGBIN := $(BUILD)/taskfs-slurm-prolog
# libuv and jansson are linked into the binary and the supervisor where
# their archives are installed (Debian's -dev packages ship them): every
# start execs the CLI, and each shared object is a mapping and relocations
# more for ld.so (`perf stat -r 300 taskfs --version`: 2.3-2.9 ms of CPU
# against 2.7-3.8 dynamic, bench/analysis.md, Row 11). The binary takes the
# archives whole and exports them (-rdynamic), so the faces plugin binds to
# this one copy (it links neither). STATIC_DEPS=0 links them shared.
UV_A := $(shell $(CC) -print-file-name=libuv_a.a)
JANSSON_A := $(shell $(CC) -print-file-name=libjansson.a)
STATIC_DEPS ?= $(if $(and $(filter /%,$(UV_A)),$(filter /%,$(JANSSON_A))),1,0)
ifeq ($(STATIC_DEPS),1)
SUP_LIBS := $(JANSSON_A) $(UV_A) -lpthread -ldl -lrt
BIN_DEP_LIBS := -Wl,--whole-archive $(JANSSON_A) $(UV_A) -Wl,--no-whole-archive -lpthread -ldl -lrt
else
SUP_LIBS := $(shell $(PKG_CONFIG) --libs jansson libuv) -lpthread
BIN_DEP_LIBS := $(SUP_LIBS)
endif
FACES_SO := $(BUILD)/taskfs-faces.so
FACE_LIBS := $(BUILD)/libtaskfs-http.a $(BUILD)/libtaskfs-mcp.a $(BUILD)/libtaskfs-fs.a \
             $(BUILD)/libtaskfs-live.a
# systemd user units: every contrib/systemd/*.in (taskfs-mount.service
# today; taskfs-serve.service and .socket join when `taskfs serve` does),
# made with the installed paths substituted (rule in the install section).
UNITS := $(patsubst contrib/systemd/%.in,$(BUILD)/systemd/%,$(wildcard contrib/systemd/*.in))

.PHONY: all test check-loaded test-c test-mcp test-mcp2 test-web test-conformance test-sh check run clean install uninstall deb FORCE bench bench-quick bench-corpus bench-queue format asan coverage api-reach
ifeq ($(FACES),static)
FACES_SO :=
endif
all: $(BIN) $(SUPBIN) $(PROLOGBIN) $(FACES_SO) $(UNITS)

# Objects are rebuilt when the flags change (a build dir made before
# -fPIC, which taskfs-faces.so needs, or with other OPT): the flags are
# kept in $(BUILD)/.flags, rewritten only when they differ.
# The layers' flags are part of it: a change of the table remakes the
# poisoned headers (each one #error, in $(BUILD)/poison/<folder>/) and
# rebuilds everything.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT := $(CC) $(CPPFLAGS) $(CFLAGS) $(foreach l,$(LAYERS),$(l): $(PKGS.$(l)) $(LAYER_CFLAGS.$(l));)
POISONS := $(foreach l,$(LAYERS),$(foreach p,$(filter-out $(PKGS.$(l)),$(PKGS)),$(foreach h,$(PKG_HEADERS.$(p)),$(l):$(p):$(h))))
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@test -d $(BUILD)/poison && echo '$(FLAGS_TEXT)' | cmp -s - $@ || { rm -rf $(BUILD)/poison && mkdir -p $(BUILD)/poison && \
	  for t in $(POISONS); do l=$${t%%:*}; h=$${t##*:}; p=$${t#*:}; p=$${p%%:*}; \
	    mkdir -p $(BUILD)/poison/$$l/$$(dirname $$h) && \
	    echo "#error \"$$l/ may not include <$$h> ($$p): not a package of its layer (Makefile PKGS.$$l; docs/ARCHITECTURE.md, Layers in the build)\"" \
	      >$(BUILD)/poison/$$l/$$h || exit 1; \
	  done && echo '$(FLAGS_TEXT)' >$@; }

# The link of the binaries is redone when how they link changes (a
# STATIC_DEPS flip, other LDFLAGS): the same kind of stamp, $(BUILD)/.link.
LINK_STAMP := $(BUILD)/.link
LINK_TEXT := $(CC) $(LDFLAGS) $(SUP_LIBS) $(BIN_DEP_LIBS)
$(LINK_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LINK_TEXT)' | cmp -s - $@ || echo '$(LINK_TEXT)' >$@

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(call src_cflags,$(firstword $(subst /, ,$*))) $(CFLAGS) -MMD -MP -c $< -o $@

# `make -s layer-cflags LAYER=core`: the preprocessor flags a folder's
# files compile with (tests/test_layer_flags.sh compiles with them).
.PHONY: layer-cflags
layer-cflags: $(FLAGS_STAMP)
	@echo '$(CPPFLAGS) $(call src_cflags,$(LAYER))'

# The web viewer's files are compiled into the binary (.incbin): editing
# one rebuilds the object that holds them.
$(BUILD)/http/web_assets.o: $(wildcard http/web/*)

$(BUILD)/libtaskfs.a: $(call obj,$(CORE_SRC))
$(BUILD)/libtaskfs-supervisor.a: $(call obj,$(SUP_SRC))
$(BUILD)/libtaskfs-live.a: $(call obj,$(LIVE_SRC))
$(BUILD)/libtaskfs-fs.a: $(call obj,$(FS_SRC))
$(BUILD)/libtaskfs-mcp.a: $(call obj,$(MCP_SRC))
$(BUILD)/libtaskfs-http.a: $(call obj,$(HTTP_SRC))
$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# Whatever builds the binary builds the supervisor it starts (order-only:
# relinking one does not relink the other).
ifeq ($(FACES),static)
$(BIN): $(call obj,$(CLI_CORE_SRC) $(CLI_FACE_SRC)) $(LIBS) | $(SUPBIN) $(PROLOGBIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(call obj,$(CLI_CORE_SRC) $(CLI_FACE_SRC)) $(LIBS) $(LDLIBS)
else
# The binary holds core and the supervisor whole (the plugin takes what it
# uses of them from here: -rdynamic), and loads the faces on demand.
$(BIN): $(call obj,$(CLI_CORE_SRC) cli/faces.c) $(BUILD)/libtaskfs-supervisor.a $(BUILD)/libtaskfs.a $(LINK_STAMP) | $(SUPBIN) $(PROLOGBIN) $(FACES_SO)
	$(CC) $(CFLAGS) $(LDFLAGS) -rdynamic -o $@ $(call obj,$(CLI_CORE_SRC) cli/faces.c) \
	  -Wl,--whole-archive $(BUILD)/libtaskfs-supervisor.a $(BUILD)/libtaskfs.a -Wl,--no-whole-archive \
	  $(BIN_DEP_LIBS) -ldl

# The faces: their verbs and libraries, and the stacks only they use. Core,
# the supervisor and cli/common.c come from the binary that loads it.
$(FACES_SO): $(call obj,$(CLI_FACE_SRC)) $(FACE_LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-Bsymbolic -o $@ $(call obj,$(CLI_FACE_SRC)) $(FACE_LIBS) \
	  $(shell $(PKG_CONFIG) --libs fuse3 libpcre2-8 libmicrohttpd) -lpthread
endif

$(SUPBIN): $(BUILD)/supervisor/bin/taskfs-supervise.o $(BUILD)/libtaskfs-supervisor.a $(BUILD)/libtaskfs.a $(LINK_STAMP)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter-out $(LINK_STAMP),$^) $(SUP_LIBS)

$(PROLOGBIN): $(BUILD)/supervisor/bin/taskfs-slurm-prolog.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(call obj,$(TEST_HELPERS)) $(LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(call obj,$(TEST_HELPERS)) $(LIBS) $(LDLIBS) -lcriterion

# LD_PRELOAD shims that tests put under the binary (tests/preload/), built
# without the sanitizer flags: a sanitized binary's interceptors call
# through to them.
PRELOADS := $(patsubst tests/preload/%.c,$(BUILD)/tests/preload/%.so,$(wildcard tests/preload/*.c))
$(BUILD)/tests/preload/%.so: tests/preload/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -fPIC -shared -o $@ $< -ldl
$(BUILD)/tests/test_feed $(BUILD)/tests/test_tailscan: $(PRELOADS)

# Small programs the node tests run (tests/tools/): a client that never
# reads, with a receive buffer of its own (noread.c), and the like.
TEST_TOOLS := $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(wildcard tests/tools/*.c))
$(BUILD)/tests/tools/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<

# The C tests run one binary at a time (each runs its own tests in
# parallel); TASKFS_BIN points the end-to-end tests at the binary.
test-c: $(BIN) $(TESTS)
	@failed=""; for t in $(TESTS); do \
	  echo "== $$t"; \
	  TASKFS_BIN=$(abspath $(BIN)) $$t --jobs 2 $(CRITERION_ARGS) || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi

# The MCP node tests: tests/mcp with the 1.x SDK (revisions up to
# 2025-11-25), tests/mcp2 with the v2 client pinned to 2026-07-28, each
# pinned by its package-lock.json.
test-mcp: $(BIN)
	@cd tests/mcp && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && \
	  TASKFS_BIN=$(abspath $(BIN)) node --test --test-concurrency=1 *.test.mjs

test-mcp2: $(BIN)
	@cd tests/mcp2 && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && \
	  TASKFS_BIN=$(abspath $(BIN)) node --test --test-concurrency=1 *.test.mjs

# The web faces' node tests: tests/web (A2A with the official
# @a2a-js/sdk client), pinned by its package-lock.json.
test-web: $(BIN) $(TEST_TOOLS)
	@cd tests/web && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && \
	  TASKFS_BIN=$(abspath $(BIN)) TASKFS_TEST_TOOLS=$(abspath $(BUILD)/tests/tools) node --test --test-concurrency=1 *.test.mjs

# The MCP conformance suite, both revisions, against expected-*.yml
# (tests/conformance/run.sh; Node 22 and the bridge from npm).
test-conformance: $(BIN)
	tests/conformance/run.sh $(abspath $(BIN)) all


# Shell tests (tests/test_*.sh): make install/uninstall, every user.
SH_TESTS := $(sort $(wildcard tests/test_*.sh))
test-sh: $(BIN) $(UNITS)
	@failed=""; for t in $(SH_TESTS); do \
	  echo "== $$t"; \
	  MAKE='$(MAKE)' TASKFS_BIN=$(abspath $(BIN)) sh $$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi


# Every test, then the check that none left anything behind
# (tests/leftovers.sh: a process, a mount or a test user of the suite
# still there fails the run, after it is printed and ended). The suite's
# processes carry TASKFS_TEST_RUN, so that the check can tell them from
# another checkout's.
TEST_PARTS := test-c test-mcp test-mcp2 test-web test-conformance test-sh
test:
	@mkdir -p $(BUILD) && tests/leftovers.sh mark $(BUILD)/leftovers.mark
	@export TASKFS_TEST_RUN=$${TASKFS_TEST_RUN:-run-$$$$}; rc=0; \
	  $(MAKE) $(TEST_PARTS) || rc=1; \
	  tests/leftovers.sh check $(BUILD)/leftovers.mark $(CURDIR) || rc=1; \
	  exit $$rc

# What CI runs: the tests, then the C tests again under ASan + UBSan, the
# long-lived processes under valgrind, each fuzzer for FUZZ_SECONDS, and the
# benchmarks at tiny sizes as a smoke test (it fails on a broken component,
# never on a timing).
check:
	@mkdir -p $(BUILD) && tests/leftovers.sh mark $(BUILD)/check.mark
	@export TASKFS_TEST_RUN=$${TASKFS_TEST_RUN:-run-$$$$}; \
	  $(MAKE) test && $(MAKE) asan && $(MAKE) valgrind && $(MAKE) fuzz && $(MAKE) bench-quick; \
	  rc=$$?; tests/leftovers.sh check $(BUILD)/check.mark $(CURDIR) || rc=1; exit $$rc

# `make check-loaded`: make check (LOADED_TARGET: another target) with a
# CPU hog on one core beside it, as a busy neighbour on CI would be: the
# suite must pass so (tests/README.md). The hog ends with the recipe's
# shell, however that ends (it spins on kill -0 of it).
LOADED_TARGET ?= check
check-loaded:
	@sh -c 'while kill -0 $$PPID 2>/dev/null; do :; done' & hog=$$!; \
	  trap 'kill $$hog 2>/dev/null' EXIT INT TERM; \
	  echo "check-loaded: a CPU hog (pid $$hog) spins beside make $(LOADED_TARGET)"; \
	  $(MAKE) $(LOADED_TARGET); rc=$$?; kill $$hog 2>/dev/null; exit $$rc

# The main job: build, then show the default store (the mount arrives with
# the mount verb; see README).
run: $(BIN)
	./scripts/run-main.sh $(abspath $(BIN))

# Benchmark helpers: bt needs only libc; tfsgen, classify_bench and corpus
# use the core API.
BENCH_BIN := $(BUILD)/bench/bt $(BUILD)/bench/tfsgen $(BUILD)/bench/classify_bench \
             $(BUILD)/bench/corpus
$(BUILD)/bench/bt: bench/bt.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $<
$(BUILD)/bench/tfsgen $(BUILD)/bench/classify_bench $(BUILD)/bench/corpus: $(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS)

bench: $(BIN) $(BENCH_BIN)
	BUILD=$(BUILD) TASKFS_BIN=$(abspath $(BIN)) ./bench/run.sh full

bench-quick: $(BIN) $(BENCH_BIN)
	BUILD=$(BUILD) TASKFS_BIN=$(abspath $(BIN)) ./bench/run.sh quick

# Recall and precision of the important lines over tests/corpus.
bench-corpus: $(BUILD)/bench/corpus
	BUILD=$(BUILD) ./bench/corpus.sh

# The queue row (issue 18): 1,000 `true` tasks through a queue with
# parallel 2 against task-spooler's `tsp -S 2`, in the same run.
bench-queue: $(BIN)
	TASKFS_BIN=$(abspath $(BIN)) ./bench/queue.sh

# ---- install (scripts/install.sh) -------------------------------------------
# `make install PREFIX=/usr DESTDIR=/tmp/x`, and `make uninstall` with the
# same variables, which removes exactly what install put there (install
# records it in $(DOCDIR)/install-manifest). Installing as a user:
# `make install PREFIX=~/.local` (user units then go where systemd looks
# in a home: ~/.local/share/systemd/user).
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
LIBDIR ?= $(PREFIX)/lib
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/taskfs
ifneq ($(filter $(HOME)/%,$(PREFIX)),)
SYSTEMDUSERUNITDIR ?= $(DATADIR)/systemd/user
else
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
endif
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

# The systemd user units (UNITS, above) are made at every make: their
# paths follow PREFIX, which may change between `make` and `make install`;
# a unit is only rewritten when its text changes.
$(BUILD)/systemd/%: contrib/systemd/%.in FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "made $@"; fi
FORCE:

# Man pages and completions are installed as soon as they exist: adding
# the file is enough. MAN_PAGES are pages ready for man (man/NAME.SECTION,
# mdoc or man); pages rendered from another source (scdoc, ...) go here as
# their targets in $(BUILD)/man/, with their rule: install depends on them.
MAN_PAGES := $(wildcard man/*.[1-8])
BASH_COMPLETION := $(wildcard contrib/completion/taskfs.bash)
ZSH_COMPLETION := $(wildcard contrib/completion/_taskfs)
FISH_COMPLETION := $(wildcard contrib/completion/taskfs.fish)
DOCS := README.md $(sort $(wildcard docs/*.md))
MCP_CONFIGS := $(sort $(wildcard contrib/mcp/*))

# MODE SRC DEST, one triple per installed file.
INSTALL_LIST = 0755 $(BIN) $(BINDIR)/taskfs \
  0755 $(SUPBIN) $(LIBEXECDIR)/taskfs/taskfs-supervise \
  0755 $(PROLOGBIN) $(LIBEXECDIR)/taskfs/taskfs-slurm-prolog \
  $(foreach f,$(FACES_SO),0644 $(f) $(LIBDIR)/taskfs/taskfs-faces.so) \
  $(foreach f,$(UNITS),0644 $(f) $(SYSTEMDUSERUNITDIR)/$(notdir $(f))) \
  $(foreach f,$(DOCS),0644 $(f) $(DOCDIR)/$(notdir $(f))) \
  $(foreach f,$(MCP_CONFIGS),0644 $(f) $(DOCDIR)/mcp/$(notdir $(f))) \
  $(foreach f,$(MAN_PAGES),0644 $(f) $(MANDIR)/man$(patsubst .%,%,$(suffix $(f)))/$(notdir $(f))) \
  $(foreach f,$(BASH_COMPLETION),0644 $(f) $(BASHCOMPDIR)/taskfs) \
  $(foreach f,$(ZSH_COMPLETION),0644 $(f) $(ZSHCOMPDIR)/_taskfs) \
  $(foreach f,$(FISH_COMPLETION),0644 $(f) $(FISHCOMPDIR)/taskfs.fish)
INSTALL_MANIFEST = $(DOCDIR)/install-manifest

install: $(BIN) $(SUPBIN) $(PROLOGBIN) $(FACES_SO) $(UNITS) $(MAN_PAGES)
	@DESTDIR='$(DESTDIR)' sh scripts/install.sh install $(INSTALL_MANIFEST) $(INSTALL_LIST)

uninstall:
	@DESTDIR='$(DESTDIR)' sh scripts/install.sh uninstall $(INSTALL_MANIFEST) $(INSTALL_LIST)

# ---- the Debian package (debian/) ----------------------------------------------
# Built out of the tree: a copy of the sources in $(BUILD)/deb/src, so the
# tree's own build/ is left alone; the .deb lands in $(BUILD)/deb/.
DEB_DIR := $(BUILD)/deb
deb:
	sh scripts/deb.sh $(DEB_DIR)

format:
	clang-format -i $(CORE_SRC) $(SUP_SRC) $(LIVE_SRC) $(FS_SRC) $(MCP_SRC) $(HTTP_SRC) $(CLI_SRC) $(TEST_SRC) include/taskfs/*.h

clean:
	rm -rf $(BUILD) build-asan build-cov build-reach

# `make coverage`: line coverage of core/ and supervisor/ from the whole
# suite (the C tests and the MCP node tests, which drive the binary). Built
# in build-cov with --coverage: the taskfs binary, and so every supervisor
# it starts, is instrumented; a supervisor writes its counts when it exits
# (a normal exit; a SIGKILLed one cannot). Needs lcov (Debian package).
# Report: build-cov/coverage.txt (per file) and build-cov/html/index.html.
COV_BUILD := build-cov
COV_MAKE = $(MAKE) BUILD=$(COV_BUILD) OPT="-O0 --coverage" LDFLAGS="--coverage"
coverage:
	$(COV_MAKE) -j2 all $(patsubst $(BUILD)/%,$(COV_BUILD)/%,$(TESTS))
	lcov --quiet --zerocounters --directory $(COV_BUILD)
	-$(COV_MAKE) test
	lcov --quiet --capture --directory $(COV_BUILD) --base-directory . \
	  --output-file $(COV_BUILD)/all.info --ignore-errors gcov,source
	lcov --quiet --extract $(COV_BUILD)/all.info '$(abspath .)/core/*' \
	  '$(abspath .)/supervisor/*' --output-file $(COV_BUILD)/coverage.info
	lcov --list $(COV_BUILD)/coverage.info | tee $(COV_BUILD)/coverage.txt
	genhtml --quiet --output-directory $(COV_BUILD)/html $(COV_BUILD)/coverage.info
	@lcov --summary $(COV_BUILD)/coverage.info 2>&1 | grep -E 'lines|functions'

# `make api-reach`: each public function of libtaskfs.a,
# libtaskfs-supervisor.a and libtaskfs-live.a, whether the shipped binary reaches it (a
# --gc-sections link in build-reach), and who calls it; fails when one is
# called by tests alone.
api-reach:
	./scripts/api-reach.sh build-reach

-include $(shell find $(BUILD) -path $(BUILD)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)

# ---- hardening (issue 7; tests/hardening/README.md) ------------------------
# `make asan`: everything and the C tests in build-asan under ASan + UBSan;
# a report from any process (detached supervisors too) fails the run.
# `make fuzz`: each libFuzzer target in fuzz/ for FUZZ_SECONDS (build-fuzz).
# `make valgrind`: supervisor, mount and MCP server end to end under memcheck.
# `make hardening`: the kill -9 matrix, fault injection and hostile-input
# tests (TASKFS_FULL=1 for the long versions).
SAN_CC ?= clang
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer
FUZZ_SECONDS ?= 30
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZERS := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
HARD_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/test_hard_*.c)))

# `make chaos`: the mixed-fault run of issue 13 (tests/chaos/chaos.c), for
# CHAOS_SECONDS: MCP servers, a mount with readers, CLI actors, and kill -9,
# SIGSTOP and a full disk throughout; prints the invariant table. Long and
# random, so not part of `make test` or CI. Needs root (tmpfs, FUSE).
CHAOS_SECONDS ?= 90
.PHONY: chaos
chaos: $(BIN) $(BUILD)/tests/chaos/chaos
	CHAOS_SECONDS=$(CHAOS_SECONDS) TASKFS_BIN=$(abspath $(BIN)) $(BUILD)/tests/chaos/chaos --jobs 1

.PHONY: fuzz fuzzers valgrind hardening
asan:
	SAN_CC='$(SAN_CC)' SAN_FLAGS='$(SAN_FLAGS)' MAKE='$(MAKE)' tests/hardening/asan.sh

$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/fuzz_%.o $(LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBS) $(LDLIBS)

fuzzers: $(FUZZERS)

# UBSan aborts at its first finding (-fno-sanitize-recover), so that
# libFuzzer counts it as a crash and the run fails; without it UBSan only
# prints and the fuzzer goes on.
fuzz:
	$(MAKE) -j2 BUILD=build-fuzz CC=clang \
	  OPT="-O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" fuzzers
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/hardening/fuzz.sh build-fuzz

valgrind: $(BIN)
	tests/hardening/valgrind.sh $(abspath $(BIN))

hardening: $(BIN) $(HARD_TESTS)
	@rc=0; for t in $(HARD_TESTS); do \
	  echo "== $$t"; \
	  TASKFS_BIN=$(abspath $(BIN)) $$t --jobs 2 $(CRITERION_ARGS) || rc=1; \
	done; exit $$rc
