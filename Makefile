# The two entry points of the README. Both install what is missing first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CONFIG ?= configs/demo.yaml
PYTHON ?= /usr/bin/python3
# The demo's out-of-distribution set: handwritten digits from Debian's
# python3-sklearn, made MNIST-like by scripts/make_digits_ood.py.
OOD ?= [{dataset: arrays, dir: runs/digits, name: digits}]

.PHONY: deps build demo test bench lint clean

deps:
	bash scripts/install-deps.sh

# Ninja, which install-deps.sh installs, for a new build folder: it rebuilds
# an object only when its own command or inputs change. CMake's Makefiles keep
# every source's precompiled-header option in one flags file that all of a
# target's objects depend on, so adding one test file rebuilt all of them. A
# build folder keeps the generator it was made with.
GENERATOR = $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja))

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(GENERATOR)
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(PYTHON) scripts/make_digits_ood.py runs/digits
	$(BUILD_DIR)/src/bnn run --config $(CONFIG) --out runs/demo --set 'evaluation.ood=$(OOD)'

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

lint:
	bash scripts/lint-dockerfile.sh

bench: build
	$(BUILD_DIR)/bench/bnn_bench_sampling

clean:
	rm -rf $(BUILD_DIR)
