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

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
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
