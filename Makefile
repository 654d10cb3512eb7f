# session-controller build. Everything is discovered by wildcard, so adding
# a source file needs no edit here:
#   lib/ api/ controller/*/ controller/*/*/ -> $(BUILD)/libsc.a
#   cmd/NAME/*.c               -> $(BINDIR)/NAME  (cmd/NAME/main.c has main;
#                                 the rest also go to $(BUILD)/libNAME.a)
#   test/unit/test_*.c         -> $(BUILD)/test/unit/test_*   (+ libsc.a)
#   test/NAME/test_*.c         -> $(BUILD)/test/NAME/test_*   (+ libNAME.a)
#   test/e2e/*.sh              run by hack/run-tests.sh after the unit tests
#
# make            all binaries into bin/
# make test       source check, build, unit + end-to-end tests
# make asan       the same tests under AddressSanitizer + UBSan
# make clean | make install PREFIX=/usr/local

PKGS    := libcurl yaml-0.1 json-c libevent openssl sqlite3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
# extra libraries of one command (only the fake serves TLS through
# libevent's bufferevent_openssl; the product binaries do not need it)
kube-apiserver-fake_LIBS := $(shell pkg-config --libs libevent_openssl 2>/dev/null)

CC      ?= cc
BUILD   ?= build
BINDIR  ?= bin
PREFIX  ?= /usr/local
OPT     ?= -O2
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= $(OPT) -g -gdwarf-4
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
             $(WARN) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -I. -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SAN_FLAGS)

ifeq ($(SANITIZE),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined
endif

LIB_SRC := $(wildcard lib/*.c api/*.c controller/*/*.c controller/*/*/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIBSC   := $(BUILD)/libsc.a

CMDS     := $(notdir $(patsubst %/,%,$(dir $(wildcard cmd/*/main.c))))
BINS     := $(CMDS:%=$(BINDIR)/%)

UNIT_SRC  := $(wildcard test/unit/test_*.c)
CMDT_SRC  := $(foreach c,$(CMDS),$(wildcard test/$(c)/test_*.c))
TEST_BINS := $(UNIT_SRC:%.c=$(BUILD)/%) $(CMDT_SRC:%.c=$(BUILD)/%)

.PHONY: all test asan unit e2e checksrc clean install run bench fuzz chaos bench-peer
all: $(BINS) $(LIBSC)

$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIBSC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(if $(LIB_OBJ),ar rcs $@ $(LIB_OBJ),ar rcs $@)

# per-command library (everything of cmd/NAME but main.c) and binary
define CMD_RULES
$(1)_SRC := $$(filter-out cmd/$(1)/main.c,$$(wildcard cmd/$(1)/*.c))
$(1)_OBJ := $$($(1)_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/lib$(1).a: $$($(1)_OBJ)
	@mkdir -p $$(dir $$@)
	rm -f $$@
	ar rcs $$@ $$($(1)_OBJ)
$(BINDIR)/$(1): $(BUILD)/obj/cmd/$(1)/main.o $(BUILD)/lib$(1).a $(LIBSC)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$($(1)_LIBS) $$(PKG_LIBS)
$(BUILD)/test/$(1)/%: test/$(1)/%.c $(BUILD)/lib$(1).a $(LIBSC)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $$(ALL_LDFLAGS) -o $$@ $$^ $$($(1)_LIBS) $$(PKG_LIBS)
endef
$(foreach c,$(CMDS),$(eval $(call CMD_RULES,$(c))))

$(BUILD)/test/unit/%: test/unit/%.c $(LIBSC)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

checksrc:
	sh hack/checksrc.sh

test: checksrc $(BINS) $(TEST_BINS)
	BINDIR=$(abspath $(BINDIR)) sh hack/run-tests.sh $(BUILD)/test test/e2e

unit: $(TEST_BINS)
	BINDIR=$(abspath $(BINDIR)) sh hack/run-tests.sh $(BUILD)/test

e2e: $(BINS)
	BINDIR=$(abspath $(BINDIR)) sh hack/run-tests.sh "" test/e2e

asan:
	$(MAKE) BUILD=build/asan BINDIR=build/asan/bin SANITIZE=1 OPT=-O1 test

run: $(BINS)
	sh hack/run-demo.sh

# long runs, not part of `make test`: each is a script of its own
bench: $(BINS) $(LIBSC)
	sh hack/bench.sh

bench-peer: $(BINS) $(LIBSC)
	sh hack/bench-peer.sh

fuzz:
	sh hack/fuzz.sh

chaos: $(BINS)
	BINDIR=$(abspath $(BINDIR)) sh test/chaos/run.sh

clean:
	rm -rf build bin

install: $(BINS) $(LIBSC)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
