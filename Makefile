# divan — build, test, bench. See README.md.
#
#   make                       build ./divan (installs missing deps first)
#   make run                   start the server on the embedded default
#   make test                  every test; ends with "N passed, N failed"
#   make SANITIZE=address,undefined test   the same under sanitizers
#   make CC=clang              build with clang (gcc is the default)
#   make bench                 benchmarks (C benches, bench/http: bench.js, attbench.js, replbench.js, dumpbench.js, mangobench.js, filterbench.js, viewbench.js, vdubench.js, att1g.js)
#   make bench-att1g           only the 1 GiB attachment proof (slow; not in make test)
#   make soak                  10 min of mixed HTTP load, divan killed -9 ≥ 50 times, then a
#                              client-side ledger and `divan check` (not in make test; its
#                              2-minute version is: soak_short). SOAK_SECONDS, SOAK_KILLS, SOAK_SEED
#   make fuzz FUZZ_SECONDS=600 run each libFuzzer target that long
#   make install               divan, divan.service, /etc/divan/local.ini (PREFIX=/usr/local, DESTDIR)
#   make uninstall             take them away again (config and data stay)
#   make deb                   build/deb/divan_VERSION_ARCH.deb (dpkg-deb; packaging/)
#   make format / make clean

CC       ?= cc
SANITIZE ?=
OPT      ?= -O2
comma    := ,
TAG      := $(notdir $(CC))$(if $(SANITIZE),-$(subst $(comma),-,$(SANITIZE)))
BUILD    := build/$(TAG)
PKGS     := rocksdb libmicrohttpd libcrypto zlib libcurl icu-i18n icu-uc mozjs-102

# Recursive (=) on purpose: pkg-config runs at recipe time, after deps.sh.
CFLAGS_ALL = -std=gnu11 $(OPT) -g -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
             -fno-omit-frame-pointer -Isrc -Itest -MMD -MP \
             $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-sanitize-recover=all) $(CFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs $(PKGS)) -lstdc++ -lpthread -lm -ldl $(LDLIBS)
# The C++ files (src/kv/rocks_reclaim.cc: RocksDB calls missing from its
# C API; src/index/js_sm.cc: SpiderMonkey's C++ embedding API) are
# compiled with the C compiler's C++ sibling.
CXX_FOR  := $(if $(findstring clang,$(CC)),clang++,g++)
CXXFLAGS_ALL = -std=c++17 $(OPT) -g -Wall -Wextra -Werror -fno-omit-frame-pointer -MMD -MP -Isrc \
               $(shell pkg-config --cflags mozjs-102) \
               $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-sanitize-recover=all) $(CXXFLAGS)
LDFLAGS_ALL = $(if $(SANITIZE),-fsanitize=$(SANITIZE)) $(LDFLAGS)

LIB_SRC   := $(filter-out src/main.c,$(wildcard src/*/*.c))
LIB_CXX   := $(wildcard src/*/*.cc)
TEST_SRC  := $(filter-out test/fuzz/% test/fdbsim/% test/fault/%,$(wildcard test/*.c test/*/*.c))
BENCH_SRC := $(wildcard bench/*.c)
FUZZ_SRC  := $(wildcard test/fuzz/fuzz_*.c)

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_CXX:%.cc=$(BUILD)/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
FUZZ_DIR  := build/fuzz
FUZZERS   := $(FUZZ_SRC:test/fuzz/%.c=$(FUZZ_DIR)/%)
DEPS_OK   := build/.deps-ok

FUZZ_SECONDS ?= 20

# The libfdb_c test double (test/fdbsim): the embedded engine's objects,
# compiled again -fPIC with hidden visibility, in a libfdb_c.so of its own.
FDBSIM     := $(BUILD)/fdbsim/libfdb_c.so
FDBSIM_SRC := test/fdbsim/fdbsim.c src/kv/kv.c src/kv/rocks.c src/kv/wset.c src/util/alloc.c \
              src/util/buf.c src/util/err.c src/util/log.c src/util/stats.c
FSYNCFAIL  := $(BUILD)/libfsyncfail.so
FDBSIM_OBJ := $(FDBSIM_SRC:%.c=$(BUILD)/fdbsim/%.o) $(BUILD)/fdbsim/src/kv/rocks_reclaim.o

.PHONY: all run test bench fuzz fuzzers fdbsim deps format clean install uninstall deb

all: divan

divan: $(BUILD)/divan
	@cp $< $@

$(DEPS_OK): scripts/deps.sh test/node/package.json share/fauxton/package-lock.json
	@bash scripts/deps.sh
	@mkdir -p $(@D) && touch $@

deps:
	@bash scripts/deps.sh

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/%.o: %.cc | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX_FOR) $(CXXFLAGS_ALL) -c $< -o $@

$(BUILD)/fdbsim/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -fvisibility=hidden -c $< -o $@

$(BUILD)/fdbsim/%.o: %.cc | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX_FOR) $(CXXFLAGS_ALL) -fPIC -fvisibility=hidden -c $< -o $@

# The prelude is linked into js_sm.o with .incbin, out of -MMD's sight.
$(BUILD)/src/index/js_sm.o: src/index/js_prelude.js

$(FDBSIM): $(FDBSIM_OBJ)
	$(CC) -shared $(LDFLAGS_ALL) -Wl,-Bsymbolic -o $@ $^ -lrocksdb -lstdc++ -lpthread

fdbsim: $(FDBSIM)

$(BUILD)/libdivan.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/divan: $(BUILD)/src/main.o $(BUILD)/libdivan.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/test_runner: $(TEST_OBJ) $(BUILD)/libdivan.a | $(FSYNCFAIL)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# The failed-fsync shim (test/fault/fsyncfail.c), LD_PRELOADed by
# http_fsyncfail; never sanitized (it runs before the sanitizer runtime).
$(FSYNCFAIL): test/fault/fsyncfail.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libdivan.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# libFuzzer targets: always clang, with ASan and UBSan, over the library
# sources compiled in (no separate archive, so coverage reaches them).
# index/ files that run queries or keep indexes need the store: fuzzers
# link the parsers only (mqparse.c, mqidx.c), never these
FUZZ_NOLINK = src/index/mindex.c src/index/mquery.c src/index/qs.c src/index/jsddoc.c src/index/vtree.c src/index/vbuild.c src/index/vred.c src/index/vread.c \
              src/index/vcheck.c src/index/icheck.c
FUZZ_CFLAGS = -std=gnu11 -O1 -g -Isrc -Itest -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all -Wall -Wextra -Werror -Wno-unused-parameter
$(FUZZ_DIR)/%: test/fuzz/%.c $(LIB_SRC) $(wildcard src/*/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -o $@ $< $(filter-out src/kv/% src/store/% src/cli/% src/http/% src/api/% src/auth/% src/repl/% $(FUZZ_NOLINK),$(LIB_SRC)) src/store/body.c src/store/name.c src/store/dumpfmt.c src/repl/spec.c src/http/url.c src/auth/crypto.c src/auth/authparse.c src/http/hparse.c src/http/hwire.c -lcrypto -lz -lm $$(pkg-config --libs icu-i18n icu-uc)

# fuzz_check runs the store's checker over a real store, so it links kv/
# and store/ (RocksDB in a temporary directory), and kv/'s C++ file built
# by clang++ beside it.
FUZZ_CHECK_SRC = $(filter-out src/cli/% src/http/% src/api/% src/auth/% src/repl/% src/index/%,$(LIB_SRC))
$(FUZZ_DIR)/rocks_reclaim.o: src/kv/rocks_reclaim.cc | $(DEPS_OK)
	@mkdir -p $(@D)
	clang++ -std=c++17 -O1 -g -Isrc -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr -c $< -o $@
$(FUZZ_DIR)/fuzz_check: test/fuzz/fuzz_check.c $(FUZZ_CHECK_SRC) $(FUZZ_DIR)/rocks_reclaim.o $(wildcard src/*/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CHECK_SRC) $(FUZZ_DIR)/rocks_reclaim.o -lrocksdb -lstdc++ -lpthread -ldl -lcrypto -lz -lm $$(pkg-config --libs icu-i18n icu-uc)

fuzzers: $(FUZZERS)

fuzz: $(FUZZERS)
	@for f in $(FUZZERS); do n=$$(basename $$f); mkdir -p build/corpus/$$n; \
	  echo "== $$n for $(FUZZ_SECONDS)s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 build/corpus/$$n test/fuzz/seeds/$$n || exit 1; done

test: divan $(BUILD)/divan $(BUILD)/test_runner $(FUZZERS) $(FDBSIM)
	@DV_BUILD=$(BUILD) DV_FUZZ_DIR=$(FUZZ_DIR) DV_FDBSIM=$(CURDIR)/$(FDBSIM) DIVAN_BIN=$(CURDIR)/$(BUILD)/divan $(BUILD)/test_runner $(TEST_ARGS)

bench: divan $(BENCHES)
	@for b in $(BENCHES); do echo "== $$(basename $$b)"; $$b || exit 1; done
	@echo "== http: divan vs pouchdb-server (bench/http)"; DIVAN_BIN=$(BUILD)/divan node bench/http/bench.js
	@echo "== http attachments: divan vs pouchdb-server (bench/http/attbench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/attbench.js
	@echo "== http replication: divan → divan and pouchdb-server → divan (bench/http/replbench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/replbench.js
	@echo "== dump, load and move of 1,000,000 docs in bounded memory vs pouchdb-server's replication (bench/http/dumpbench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/dumpbench.js
	@echo "== http mango: divan vs pouchdb-server (bench/http/mangobench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/mangobench.js
	@echo "== http filters: divan vs pouchdb-server, filtered _changes (bench/http/filterbench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/filterbench.js
	@echo "== http views: divan vs pouchdb-server (bench/http/viewbench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/viewbench.js
	@echo "== http validate_doc_update: PUT docs/s with one validator vs none (bench/http/vdubench.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/vdubench.js
	@$(MAKE) --no-print-directory bench-att1g

# The kill -9 soak (test/node/soak/soak.js); SOAK_SEED=N replays a run's plan.
SOAK_SECONDS ?= 600
SOAK_KILLS   ?= 50
.PHONY: soak
soak: divan
	@SOAK_SECONDS=$(SOAK_SECONDS) SOAK_KILLS=$(SOAK_KILLS) DV_BUILD=$(BUILD) DIVAN_BIN=$(CURDIR)/$(BUILD)/divan node test/node/soak/soak.js

.PHONY: bench-att1g
bench-att1g: divan
	@echo "== http: a 1 GiB attachment up and down in < 128 MiB RSS (bench/http/att1g.js)"; DIVAN_BIN=$(BUILD)/divan node bench/http/att1g.js

run: divan
	./divan serve

# Installing as a service: packaging/install.sh lays the files out (its
# header lists them), packaging/mkdeb.sh builds the Debian package.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
INSTALL_VARS = BIN=$(BUILD)/divan DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) \
               $(if $(BINDIR),BINDIR=$(BINDIR)) $(if $(UNITDIR),UNITDIR=$(UNITDIR)) \
               $(if $(DATAROOTDIR),DATAROOTDIR=$(DATAROOTDIR)) $(if $(FAUXTON),FAUXTON=$(FAUXTON))

install: $(BUILD)/divan
	@$(INSTALL_VARS) sh packaging/install.sh

uninstall:
	@$(INSTALL_VARS) sh packaging/install.sh uninstall

deb: $(BUILD)/divan
	@sh packaging/mkdeb.sh $(BUILD)/divan build/deb

format:
	clang-format -i $(wildcard src/*/*.[ch] src/*.c test/*.[ch] test/*/*.[ch] bench/*.c)

clean:
	rm -rf build divan

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FDBSIM_OBJ:.o=.d) $(BUILD)/src/main.d $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%.d)
