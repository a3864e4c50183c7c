# abtui: the two commands are `make demo` and `make test`; both set everything up first.
# `make check` is the contributors' quick one: lint, types and unit tests, no root, no network.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
comma := ,
empty :=
space := $(empty) $(empty)
DEB_PACKAGES := iperf3 openssh-server openssh-client iproute2 ethtool wireguard-tools \
	wireguard-go iputils-ping tmux procps kmod sudo qemu-system-x86 busybox-static kexec-tools \
	linux-perf sockperf
DEB_PROGRAMS := iperf3 sshd ssh ssh-keygen ip ethtool wg wireguard-go ping tmux pgrep sudo \
	qemu-system-x86_64 busybox depmod kexec perf sockperf
# The ARM guest's tools (abtui.lab.kbuild, abtui.lab.vm.armguest): installed for the slow tier
# only (`make arm`, which `make test-slow` runs): minutes of downloads CI's default tier skips
ARM_DEB_PACKAGES := qemu-system-arm gcc-arm-linux-gnueabihf make flex bison bc patch xz-utils
ARM_DEB_PROGRAMS := qemu-system-arm arm-linux-gnueabihf-gcc make flex bison bc patch xz
# The kernel builds the VM tests boot (tests/lab/test_vm_lab.py and the other VM tests, all of
# the slow tier): fetched once into the kernel cache (~/.cache/abtui/kernels) by `make kernels`,
# which `make test-slow` and `ABTUI_SLOW=1 make test` run; ~70 MB each to download, ~400 MB
# each unpacked.
TEST_KERNELS := linux-image-6.1.0-47-amd64 linux-image-6.1.0-57-amd64
# The kernel source the ARM guest's builds start from (abtui.lab.kbuild; profiles/patches/
# arm-neon-softirq applies to it): 138 MB fetched once into the kernel cache's sources/, ~20 s
# to unpack; the default tier checks the series applies to it (tests/unit/lab/
# test_arm_neon_series.py), the slow tier builds BEFORE and AFTER from it. The ARM guest's
# userspace (abtui.lab.vm.armroot): Debian's armhf packages, 12 MB, with apt's own package lists
# for armhf kept in the cache (this machine's apt configuration is left as it is).
KERNEL_SOURCES := linux-source-6.1
# The slow tier's third build (tests/lab/test_vm_builds_lab.py: wireguard-gro on three builds),
# fetched by `make test-slow` and by `ABTUI_SLOW=1 make test`.
SLOW_KERNELS := linux-image-6.1.0-52-amd64
ifeq ($(ABTUI_SLOW),1)
TEST_KERNELS += $(SLOW_KERNELS)
# what only the slow tier boots and builds: fetched when it runs
SLOW_PREREQS := kernels arm
endif

.PHONY: setup demo test check test-slow bench soak reliability lint clean-venv lab-down kernels arm

setup: .deps-stamp $(VENV)/.installed

# Debian packages, installed only when a program is missing (idempotent, seconds when done).
.deps-stamp:
	@missing=""; for p in $(DEB_PROGRAMS); do \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages (missing:$$missing)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $(DEB_PACKAGES) >/dev/null; fi
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
	@mkdir -p /run/sshd
	@touch $@

# The virtual environment, created without pip and given uv from the package index (by the
# system's pip): uv installs abtui's dependencies in a third of pip's time (docs/performance.md:
# `make demo` cold). Where uv cannot be had, a venv with pip does the same, slower.
$(PY):
	@python3 -m venv --without-pip $(VENV) && \
	  python3 -m pip --python $(PY) install -q uv >/dev/null 2>&1 || \
	  { rm -rf $(VENV) && python3 -m venv $(VENV); }

INSTALL = $(if $(wildcard $(VENV)/bin/uv),$(VENV)/bin/uv pip install -q --python $(PY),\
	$(PY) -m pip install -q)
# What the console and the lab import, compiled once: uv does not compile what it installs,
# and where PYTHONDONTWRITEBYTECODE is set Python never caches a compiled module, so each start
# would compile them again (a second of CPU). Imported, not compileall'd: all of scipy would
# take half a minute, and the console needs only scipy.special, minutes in (a verdict).
WARM_IMPORTS := abtui.commands.demo abtui.commands.tui abtui.lab.netns abtui.measure.engine.front \
	abtui.ui.app abtui.ui.guard abtui.reports.stats

# What the console, the lab and the SSH links run, compiled whole once installed: the imports
# above miss what is imported only while the console runs (Textual's terminal driver, rich's
# emoji table, asyncssh and cryptography, imported when the first link connects), and each start
# compiled those again: 0.04 s of CPU before the first frame, 0.2 s more before the first number.
# Seconds, once (numpy and scipy, far larger, are left to the imports above).
DEP_PACKAGES := textual rich asyncssh cryptography platformdirs plotext textual_plotext tomlkit attr
SITE = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')

# What `make demo` needs: abtui and its dependencies, no test or VM tools.
$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(INSTALL) -e .
	@env -u PYTHONDONTWRITEBYTECODE $(PY) -c 'import $(subst $(space),$(comma) ,$(WARM_IMPORTS))'
	@touch $@

# Everything: the tests, lint and VM tools and the plot images' matplotlib too.
$(VENV)/.installed: $(VENV)/.installed-run
	$(INSTALL) -e '.[test,vm,plot]'
	@touch $@

# apt's package lists may be missing or stale on a fresh machine: updated once, then retried.
# Where they still cannot be had, the VM tests skip, saying so.
kernels: setup
	@$(PY) -m abtui.lab.kernels $(TEST_KERNELS) >/dev/null 2>&1 || { apt-get update -qq && \
	  $(PY) -m abtui.lab.kernels $(TEST_KERNELS) >/dev/null; } || \
	  echo "warning: the test kernels cannot be fetched: the VM tests will skip"

# The ARM guest's tools, kernel source and userspace (the slow tier's ARM builds and guest; the
# default tier's checks of them skip, saying so, where they are absent)
arm: setup
	@missing=""; for p in $(ARM_DEB_PROGRAMS); do \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends $(ARM_DEB_PACKAGES) >/dev/null; fi
	@for s in $(KERNEL_SOURCES); do $(PY) -m abtui.lab.kbuild fetch $$s >/dev/null || \
	  echo "warning: $$s cannot be fetched: the series check and the ARM builds will skip"; done
	@$(PY) -m abtui.lab.vm.armroot >/dev/null || \
	  echo "warning: the armhf userspace cannot be made: its check and the ARM guest will skip"

# Test-only Debian packages: Chromium, for the headless-browser test of `abtui serve`
# (tests/ui/test_serve_chromium.py; it skips, saying so, where it could not be installed).
TEST_DEB_PACKAGES := chromium
.test-deps-stamp:
	@command -v chromium >/dev/null || { echo "installing test-only Debian packages: \
	  $(TEST_DEB_PACKAGES)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends $(TEST_DEB_PACKAGES) >/dev/null; } || \
	  echo "warning: chromium cannot be installed: the browser test of abtui serve will skip"
	@touch $@

demo: .deps-stamp $(VENV)/.installed-run $(VENV)/.compiled
	$(VENV)/bin/abtui demo

# The dependencies' bytecode (DEP_PACKAGES, and the modules at the top of site-packages: the
# editable install's finder, imported by every start), again after any install
$(VENV)/.compiled-deps: $(VENV)/.installed-run $(wildcard $(VENV)/.installed)
	@$(PY) -m compileall -q -l $(SITE) >/dev/null
	@$(PY) -m compileall -q -j0 $(addprefix $(SITE)/,$(DEP_PACKAGES)) >/dev/null
	@touch $@

# abtui's own modules compiled ahead, again when one changed: where PYTHONDONTWRITEBYTECODE is
# set, Python never caches them, and every start compiled ~100 modules again (0.3 s of CPU)
$(VENV)/.compiled: $(VENV)/.compiled-deps $(shell find abtui -name '*.py')
	@$(PY) -m compileall -q abtui >/dev/null
	@touch $@

# What the project declares of its code, checked by every target that tests it: style, the
# layers' contracts, and the types (strict for the packages pyproject.toml names); a mypy
# error fails the target as a failed test does.
define lint-steps
	$(VENV)/bin/ruff check abtui tests
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy abtui
endef

# The slowest tests are listed at the end: CI has a time limit, and this is where it goes.
test: setup $(SLOW_PREREQS) .test-deps-stamp
	$(lint-steps)
	$(VENV)/bin/pytest -q --durations=40

# The contributors' check: lint, types and the unit tests, as any user, offline once the
# virtual environment is made (no Debian packages, kernels or labs: those need root). The
# simulations and fuzzers (marked sim) are left to `make test`: CPU time measured in the README.
# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: without it every run compiled
# the test modules again, pytest's assertions rewritten (collecting took 11 s of CPU, 3 s with
# them cached), and every Python a test starts compiled abtui again (the tests' children took
# 31 s of CPU, 26 s with it cached; both at load 5-9, 2026-12-07).
check: $(VENV)/.installed
	$(lint-steps)
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q -m 'not sim' tests/unit

# The slow tier alone (tests marked `slow`, left out of `make test`: six VM guests, minutes);
# `ABTUI_SLOW=1 make test` runs it with every other tier.
test-slow: setup arm
	@$(MAKE) --no-print-directory kernels ABTUI_SLOW=1
	ABTUI_SLOW=1 $(VENV)/bin/pytest -q -m slow

# abtui compiled as `make demo` leaves it: the first frame is timed as a user gets it
bench: setup $(VENV)/.compiled
	$(PY) -m tests.bench

# docs/reliability.md: the fault scenarios' outcomes of one run, written only when asked
reliability: setup kernels arm
	ABTUI_SLOW=1 ABTUI_RELIABILITY_TABLE=1 $(VENV)/bin/pytest -q

soak: setup
	ABTUI_SLOW=1 ABTUI_RELIABILITY_TABLE=1 ABTUI_SOAK_SECONDS=600 $(VENV)/bin/pytest -q -m lab tests/lab -k soak
	ABTUI_WALK_SEED=random ABTUI_WALK_STEPS=600 $(VENV)/bin/pytest -q -m lab tests/lab/test_console_walk.py

lint: $(VENV)/.installed
	$(lint-steps)

lab-down: setup
	$(VENV)/bin/abtui lab down
