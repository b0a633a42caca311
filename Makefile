# Makefile - the short front door to the meson build. It owns the entry
# points people and CI type (make, make check, make check-asan, make fuzz,
# make install) and nothing else: what is compiled, and how, lives in
# meson.build; which packages are needed lives in scripts/deps; how tests
# are run and counted lives in scripts/check.

MESON ?= meson
NINJA ?= ninja
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
PREFIX ?= /usr/local
DESTDIR ?=
# Development and CI builds turn warnings into errors; meson.build's default
# (for pip install) does not.
DEV_SETUP ?= -Dwerror=true

# Without these the build cannot even be configured; scripts/deps is asked
# only when one is missing or the tree was never configured.
REQUIRED_TOOLS := $(MESON) $(NINJA) gcc pkg-config

MANIFEST := $(BUILD)/install-manifest.txt
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all deps-if-needed check check-asan fuzz fuzz-smoke fuzz-build \
	install uninstall demo bench attacks roundtrip compat profile clean

all: deps-if-needed
	@if [ ! -f $(BUILD)/build.ninja ]; then \
		if [ -d $(BUILD)/meson-private ]; then \
			$(MESON) setup --reconfigure $(BUILD) --prefix=$(PREFIX) $(DEV_SETUP); \
		else \
			$(MESON) setup $(BUILD) --prefix=$(PREFIX) $(DEV_SETUP); \
		fi; \
	fi
	$(NINJA) -C $(BUILD)

deps-if-needed:
	@need=0; [ -f $(BUILD)/build.ninja ] || need=1; \
	for t in $(REQUIRED_TOOLS); do \
		command -v $$t >/dev/null 2>&1 || need=1; \
	done; \
	if [ $$need = 1 ]; then scripts/deps; fi

# The fuzz smoke runs inside scripts/check so that its verdict is part of
# the one summary line; a failed fuzz build is counted there too rather
# than cutting the run short.
check: all
	@fuzz_failed=0; \
	if command -v clang >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory fuzz-build || fuzz_failed=1; \
	fi; \
	PYSB_FUZZ_BUILD_FAILED=$$fuzz_failed scripts/check --build $(BUILD) \
		--fuzz-build $(FUZZ_BUILD) --fuzz-seconds $(FUZZ_SMOKE_SECONDS)

check-asan: deps-if-needed
	@if [ ! -f $(ASAN_BUILD)/build.ninja ]; then \
		$(MESON) setup $(ASAN_BUILD) -Dbuildtype=debug $(DEV_SETUP) \
			-Db_sanitize=address,undefined -Db_lundef=false; \
	fi
	$(NINJA) -C $(ASAN_BUILD)
	@$(SANITIZER_ENV) PYSB_SANITIZED=1 scripts/check --build $(ASAN_BUILD) \
		--no-fuzz

# libFuzzer needs clang; the fuzz targets get ASan and UBSan from
# tests/meson.build.
fuzz-build: deps-if-needed
	@command -v clang >/dev/null 2>&1 || { \
		echo "python-sb: make fuzz needs clang" >&2; \
		echo "Hint: scripts/deps installs it" >&2; exit 1; }
	@if [ ! -f $(FUZZ_BUILD)/build.ninja ]; then \
		CC=clang $(MESON) setup $(FUZZ_BUILD) -Dfuzz=true $(DEV_SETUP) \
			-Dbuildtype=debugoptimized; \
	fi
	$(NINJA) -C $(FUZZ_BUILD) tests/fuzz_policy tests/fuzz_net \
		tests/fuzz_prescan tests/fuzz_review tests/fuzz_denial

fuzz: fuzz-build
	@scripts/check --fuzz-only --fuzz-build $(FUZZ_BUILD) \
		--fuzz-seconds $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@scripts/check --fuzz-only --fuzz-build $(FUZZ_BUILD) \
		--fuzz-seconds $(FUZZ_SMOKE_SECONDS)

# meson's install log doubles as the manifest; it is copied because any
# later install would overwrite it, and make uninstall must remove exactly
# what make install put (DESTDIR included).
install: all
	$(MESON) configure $(BUILD) --prefix=$(PREFIX)
	$(MESON) install -C $(BUILD) \
		$(if $(DESTDIR),--destdir "$(abspath $(DESTDIR))")
	cp $(BUILD)/meson-logs/install-log.txt $(MANIFEST)

uninstall:
	@if [ ! -f $(MANIFEST) ]; then \
		echo "python-sb: no $(MANIFEST): nothing was installed" \
			"from this build directory" >&2; exit 1; \
	fi
	@grep -v '^#' $(MANIFEST) | while IFS= read -r f; do \
		if [ -d "$$f" ] && [ ! -L "$$f" ]; then \
			rmdir --ignore-fail-on-non-empty "$$f"; \
		else \
			rm -f "$$f" && echo "removed $$f"; \
		fi; \
	done
	@rm -f $(MANIFEST)

# The quick demo (examples/quick-demo): offline, in a temporary copy; the
# step-by-step version is examples/quick-demo/run-demo.py --steps.
demo: all
	@python3 examples/quick-demo/run-demo.py --python-sb $(BUILD)/python-sb

# Ratios against plain python in one interleaved run; writes
# bench/RESULTS.md, and its figures as a picture, bench/RESULTS.svg.
# BENCH_ROUNDS=N for more rounds (at least 10).
BENCH_ROUNDS ?= 15
bench: all
	/usr/bin/python3 bench/run --rounds $(BENCH_ROUNDS) --build $(BUILD)
	/usr/bin/python3 bench/plot.py bench/RESULTS.md bench/RESULTS.svg

# The adversarial suite (tests/attacks): a table attack x provider of the
# layer that refused each attack; fails when one escaped undocumented.
attacks: all
	@scripts/attacks --build $(BUILD)

# The learning round trip (tests/e2e/test_roundtrip.py) over every program:
# learned once, then run under auto and subprocess, in a fresh directory and
# in $$HOME. make check runs a representative part of it.
roundtrip: all
	@PYSB_BIN=$(abspath $(BUILD))/python-sb PYSB_ROUNDTRIP=full \
		/usr/bin/python3 -m pytest -q tests/e2e/test_roundtrip.py

# CPython's own test modules, plain and under the allow-all policy, on the
# oldest and newest CPython of pyenv; every difference is reported
compat: all
	@scripts/compat --build $(BUILD) $(COMPAT_ARGS)

# Where one start spends its time, phase by phase (scripts/profile):
# $PYSB_PROFILE marks in the launcher and the guard, medians printed.
profile: all
	@/usr/bin/python3 scripts/profile --build $(BUILD) $(PROFILE_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
