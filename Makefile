# kiln: the two commands are `make demo` and `make test`; both set up first.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_TIME ?= 600
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all setup build py demo tour bench-models bench-peers bench-peers-busy bench-eager-pair test-peers test test-cpp test-py check-deps test-asan test-tsan fuzz fuzz-build fuzz-saved-model fuzz-tf-saved-model fuzz-onnx fuzz-bundle fuzz-decoders fuzz-serve onnx-node-tests bench format format-check clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	@$(MAKE) --no-print-directory py

# The Python package: kiln._kiln (python/src) built by scikit-build-core
# against the libkiln.so above, installed editable into .venv.
PY_STAMP = build/python/.installed
py: $(PY_STAMP)
$(PY_STAMP): $(wildcard python/src/*.cpp python/src/*.h) $(BUILD)/libkiln.so pyproject.toml CMakeLists.txt
	.venv/bin/python -m pip install --quiet --no-build-isolation --no-deps -e . \
	  -Cbuild-dir=build/python -Ccmake.define.KILN_PREBUILT_DIR=$(abspath $(BUILD)) \
	  -Cbuild.verbose=false
	@touch $@

# The main job: the seed workloads, eager vs function, timed by kiln.benchmark;
# writes bench/results/demo.{json,png}. Then the same harness from C++.
demo: build
	.venv/bin/python bench/demo.py
	@echo; echo "== jit_compile vs graph mode on 20 random programs (bench/jit_random.py; 100 in docs/BENCHMARKS.md)"
	.venv/bin/python bench/jit_random.py --programs 20 --quiet --json bench/results/jit_random.json
	@echo; echo "== a kiln.profiler trace of EfficientNetV2-S (bench/profile_demo.py; docs/PROFILER.md)"
	.venv/bin/python bench/profile_demo.py --logdir $(BUILD)/profile
	@echo; echo "== the C++ harness (examples/bench_demo.cpp)"
	$(BUILD)/bench_demo
	.venv/bin/python examples/train_digits.py --export $(BUILD)/export
	@echo; echo "== serving the exports from C++, no Python (examples/serve.cpp, kiln-run)"
	$(BUILD)/serve $(BUILD)/export
	$(BUILD)/kiln-run $(BUILD)/export/digits
	@echo; echo "== kiln-serve: TensorFlow Serving's REST API on the digits export (examples/serve_demo.py; docs/SERVING.md)"
	.venv/bin/python examples/serve_demo.py $(BUILD)/export

# Eager kiln and PyTorch alternated round by round in one process (microsecond workloads,
# where separate runs on a shared machine differ more than the frameworks do).
bench-eager-pair: build
	@scripts/setup_peers.sh
	.venv-peers/bin/python bench/peers/eager_pair.py --only dynamic_rnn while_tanh chain100 eager_add_overhead

# Peers side by side: CPU TensorFlow, JAX and PyTorch in .venv-peers (scripts/setup_peers.sh),
# the same workloads through each, then ratios kiln/peer (bench/results/compare.json); then
# issue 43's rows: every model beside TF, JAX, PyTorch and the CPU inference engines
# (onnxruntime and OpenVINO running kiln's ONNX export), alternated in one process, with
# GFLOP/s against the matmul peak (bench/results/engines.json).
ENGINE_MODELS ?= lstm2 transformer4 efficientnetv2s_224 efficientnetv2s_224_b8 \
  efficientnetv2s_384 efficientnetv2s_384_b8 resnet50_224 resnet50_224_b8 resnet50_384 \
  resnet50_384_b8 mobilenetv3_224 mobilenetv3_224_b8 mobilenetv3_384 mobilenetv3_384_b8
bench-peers: build
	@scripts/setup_peers.sh
	.venv/bin/python bench/demo.py --json-only
	.venv-peers/bin/python bench/peers/run_peers.py
	.venv/bin/python bench/peers/compare.py
	.venv-peers/bin/python bench/peers/model_pair.py --only $(ENGINE_MODELS) \
	  --out bench/results/engines.json
	.venv-peers/bin/python bench/peers/train_pair.py --out bench/results/train_pair.json

# Model workloads (issue 41: LSTM, transformer encoder, ResNet50, MobileNetV3) beside
# TensorFlow, XLA, JAX and PyTorch; the same-run table is bench/peers/model_pair.py's.
bench-models: build
	@scripts/setup_peers.sh
	.venv/bin/python bench/demo.py --models --json-only
	.venv-peers/bin/python bench/peers/run_peers.py --models
	.venv/bin/python bench/peers/compare.py --kiln bench/results/demo-models.json \
	  --peers bench/results/peers-models.json --out bench/results/compare-models.json
	.venv-peers/bin/python bench/peers/model_pair.py

# TensorFlow reads kiln's files and kiln TensorFlow's: SavedModels both ways, checkpoints,
# Keras files, layers and applications against TF's Keras (tests/peers/).
test-peers: build
	@scripts/setup_peers.sh
	.venv/bin/python examples/export_model.py $(BUILD)/export-peers
	.venv-peers/bin/python tests/peers/check_saved_model.py $(BUILD)/export-peers/digits \
	  $(BUILD)/export-peers/charunpack
	.venv-peers/bin/python tests/peers/check_serving.py $(BUILD)/export-peers --bin $(BUILD)/kiln-serve
	.venv/bin/python tests/peers/write_kiln_saved_models.py $(BUILD)/kiln-saved-models
	.venv-peers/bin/python tests/peers/check_saved_model.py $(BUILD)/kiln-saved-models/flow \
	  $(BUILD)/kiln-saved-models/keras_cnn $(BUILD)/kiln-saved-models/jit \
	  $(BUILD)/kiln-saved-models/keras_rnn $(BUILD)/kiln-saved-models/scan \
	  $(BUILD)/kiln-saved-models/mobilenetv3 $(BUILD)/kiln-saved-models/efficientnetb0 \
	  $(BUILD)/kiln-saved-models/resnet50 $(BUILD)/kiln-saved-models/keras_export
	.venv-peers/bin/python tests/peers/check_random_programs.py --programs 60
	.venv/bin/python tests/peers/write_kiln_checkpoints.py $(BUILD)/ckpt-peers
	.venv-peers/bin/python tests/peers/check_checkpoints.py $(BUILD)/ckpt-peers
	.venv-peers/bin/python tests/peers/check_keras_files.py
	.venv-peers/bin/python tests/peers/check_keras_layers.py
	.venv-peers/bin/python tests/peers/check_keras_checkpoints.py
	.venv-peers/bin/python tests/peers/check_applications.py
	.venv-peers/bin/python tests/peers/check_tf_saved_models.py --out $(BUILD)/tf-saved-models
	.venv/bin/python tests/peers/write_kiln_summaries.py $(BUILD)/summaries-peers
	.venv-peers/bin/python tests/peers/check_summaries.py $(BUILD)/summaries-peers
	.venv-peers/bin/python tests/peers/check_tensorboard_browser.py $(BUILD)/summaries-peers
	.venv-peers/bin/python tests/peers/check_xplane.py $(BUILD)/summaries-peers

# The same on a busy machine: after the idle run above, every workload again with one
# process spinning per core, kiln and the peers alike; then each one's slowdown.
BUSY ?= $(shell nproc)
bench-peers-busy: bench-peers
	.venv/bin/python bench/demo.py --json-only --busy $(BUSY)
	.venv-peers/bin/python bench/peers/run_peers.py --busy $(BUSY) --out bench/results/peers-busy.json
	.venv/bin/python bench/peers/slowdown.py

# A tour of the eager ops and a graph function from C++.
tour: build
	$(BUILD)/kiln_demo
	$(BUILD)/function_example

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-py: build
	.venv/bin/python -m pytest tests/python -q

test: test-cpp test-py
	@scripts/test_summary.sh $(BUILD)

# A fresh machine has what the build and the tests used: Debian packages setup.sh installs,
# Python packages requirements.txt pins (.ci/run runs it after make test).
check-deps:
	@python3 scripts/check_deps.py $(BUILD)

test-asan: setup
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_BUILD_BENCH=OFF \
	  -DKILN_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer + ASan/UBSan over the saved-model loader and the ONNX loader (tests/fuzz/),
# built with clang, FUZZ_TIME seconds each. Seeds: real exports (tests/fuzz/make_seeds.py),
# ONNX's node-test models (tests/fuzz/make_onnx_seeds.py) and the checked-in corpora; new
# inputs and any crash go to $(FUZZ_BUILD)/corpus*, $(FUZZ_BUILD)/crash-*.
fuzz: fuzz-saved-model fuzz-tf-saved-model fuzz-onnx fuzz-bundle fuzz-decoders fuzz-serve

# Every ONNX backend node test through kiln; the pass table goes into docs/ONNX.md.
onnx-node-tests: py
	.venv/bin/python tests/python/onnx/node_suite.py --report docs/ONNX.md

fuzz-build: build
	@command -v clang++ >/dev/null || apt-get install -y -qq --no-install-recommends clang
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DKILN_BUILD_BENCH=OFF -DKILN_BUILD_TESTS=OFF -DKILN_FUZZ=ON -DKILN_SANITIZE=address,undefined
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target saved_model_fuzz onnx_fuzz bundle_fuzz decoders_fuzz \
	  serve_fuzz

fuzz-saved-model: fuzz-build
	.venv/bin/python tests/fuzz/make_seeds.py $(FUZZ_BUILD)/base $(FUZZ_BUILD)/seeds
	mkdir -p $(FUZZ_BUILD)/corpus
	cd $(FUZZ_BUILD) && KILN_FUZZ_BASE=$(CURDIR)/tests/fuzz/base ASAN_OPTIONS=detect_leaks=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./saved_model_fuzz -max_total_time=$(FUZZ_TIME) \
	  -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 corpus seeds $(CURDIR)/tests/fuzz/corpus

# The loader over a SavedModel TensorFlow wrote (tests/fixtures/tf_written/saved_models/module).
fuzz-tf-saved-model: fuzz-build
	python3 tests/fuzz/make_tf_seeds.py $(FUZZ_BUILD)/tf_seeds 400
	mkdir -p $(FUZZ_BUILD)/tf_corpus
	cd $(FUZZ_BUILD) && KILN_FUZZ_BASE=$(CURDIR)/tests/fixtures/tf_written/saved_models/module \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./saved_model_fuzz \
	  -max_total_time=$(FUZZ_TIME) -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
	  tf_corpus tf_seeds $(CURDIR)/tests/fuzz/tf_corpus

# The checkpoint reader over a bundle TensorFlow wrote (tests/fixtures/tf_written/checkpoints).
fuzz-bundle: fuzz-build
	python3 tests/fuzz/make_bundle_seeds.py $(FUZZ_BUILD)/bundle_seeds
	mkdir -p $(FUZZ_BUILD)/bundle_corpus
	cd $(FUZZ_BUILD) && KILN_FUZZ_BUNDLE=$(CURDIR)/tests/fixtures/tf_written/checkpoints/dtypes/ckpt \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./bundle_fuzz \
	  -max_total_time=$(FUZZ_TIME) -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
	  bundle_corpus bundle_seeds $(CURDIR)/tests/fuzz/bundle_corpus

# The decoders of untrusted bytes (Example/SequenceExample parsing, PNG/JPEG/image
# decoding, DecodeRaw, ParseTensor, UnicodeDecode, TFRecord reading): one selector byte,
# then the bytes (tests/fuzz/decoders_fuzz.cpp).
fuzz-decoders: fuzz-build
	python3 tests/fuzz/make_decoder_seeds.py $(FUZZ_BUILD)/decoders_seeds
	mkdir -p $(FUZZ_BUILD)/decoders_corpus
	cd $(FUZZ_BUILD) && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ./decoders_fuzz -max_total_time=$(FUZZ_TIME) -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
	  decoders_corpus decoders_seeds $(CURDIR)/tests/fuzz/decoders_corpus

# kiln-serve's REST request parsing (predict bodies, URL paths; tests/fuzz/serve_fuzz.cpp).
fuzz-serve: fuzz-build
	python3 tests/fuzz/make_serve_seeds.py $(FUZZ_BUILD)/serve_seeds
	mkdir -p $(FUZZ_BUILD)/serve_corpus
	cd $(FUZZ_BUILD) && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ./serve_fuzz -max_total_time=$(FUZZ_TIME) -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
	  serve_corpus serve_seeds $(CURDIR)/tests/fuzz/serve_corpus

fuzz-onnx: fuzz-build
	.venv/bin/python tests/fuzz/make_onnx_seeds.py $(FUZZ_BUILD)/onnx_seeds
	mkdir -p $(FUZZ_BUILD)/onnx_corpus
	cd $(FUZZ_BUILD) && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ./onnx_fuzz -max_total_time=$(FUZZ_TIME) -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
	  onnx_corpus onnx_seeds $(CURDIR)/tests/fuzz/onnx_corpus

test-tsan: setup
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_BUILD_BENCH=OFF \
	  -DKILN_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD)/bench_*; do echo "== $$b"; $$b --benchmark_repetitions=5 \
	  --benchmark_report_aggregates_only=true; done

FORMAT_FILES = $(shell git ls-files '*.h' '*.cpp')
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
