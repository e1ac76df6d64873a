# The two entry points of the README. Both install what is missing first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CONFIG ?= configs/demo.yaml

.PHONY: deps build demo test bench lint clean

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/src/bnn run --config $(CONFIG) --out runs/demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

lint:
	bash scripts/lint-dockerfile.sh

bench: build
	$(BUILD_DIR)/bench/bnn_bench_sampling

clean:
	rm -rf $(BUILD_DIR)
