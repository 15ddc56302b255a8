# oncelog: `make demo` runs the ledger on the embedded broker, `make test` runs the suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv wheel jars phoenix toxiproxy gofakes3 linearizability faketime test lint format docs docs-reference broker broker-stop demo screenshot chaos bench bench-core bench-peers bench-fleet bench-echo bench-http bench-checkpoint faults soak sdk-ts clean

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt setuptools
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# The compiled core (oncelog/_compiled.py): mypyc builds its C extensions in place, again
# whenever one of their sources changes (ONCELOG_INTERPRETED=1: the Rust extension alone).
# --force: built from the sources, never from what an earlier build left in build/.
CORE_SRC := oncelog/referee/fold.py oncelog/referee/judge.py oncelog/referee/validate.py oncelog/identity/tokens.py oncelog/identity/canonical_json.py oncelog/identity/ids.py oncelog/identity/validation.py oncelog/identity/partitioner.py oncelog/schemas/request_reader.py oncelog/schemas/request_reader_previous.py oncelog/schemas/decision_reader.py oncelog/schemas/decision_reader_previous.py oncelog/schemas/avro_read.py oncelog/schemas/previous.py oncelog/schemas/decision_derived.py oncelog/schemas/avro_write.py oncelog/schemas/byte_budget.py oncelog/schemas/record_writers.py oncelog/schemas/fast_paths.py oncelog/projector/row_builders.py oncelog/projector/known_ids.py oncelog/projector/states.py
# The Rust extension (oncelog._native, native/): setup.py builds it with the core, so an edit
# to the crate rebuilds both. Every .rs file under native/src, at any depth.
NATIVE_SRC := native/Cargo.toml native/Cargo.lock $(shell find native/src -name '*.rs')
CORE_STAMP := $(VENV)/.compiled-stamp
$(CORE_STAMP): $(STAMP) $(CORE_SRC) $(NATIVE_SRC) oncelog/_compiled.py setup.py
	$(PY) setup.py -q build_ext --inplace --force
	touch $(CORE_STAMP)

venv: $(STAMP) $(CORE_STAMP)

# A wheel with the compiled core and the Rust extension in dist/: building needs a C compiler
# and cargo, installing neither.
wheel: venv  ## dist/oncelog-<version>-<python>-<platform>.whl, the compiled core included
	rm -rf build  # what an earlier build left there would go into the wheel too
	$(PY) -m pip wheel -q --no-deps -w dist .

# tests/tracing/test_otlp_phoenix.py sends spans over OTLP to a real receiver and reads them
# back: Arize Phoenix, from PyPI, in a venv of its own (its many pins stay out of the ledger's).
PHOENIX_VENV ?= .venv-phoenix
PHOENIX_VERSION ?= 20.26.1
$(PHOENIX_VENV)/.installed-stamp:
	python3 -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install -q --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install -q arize-phoenix==$(PHOENIX_VERSION)
	touch $@

phoenix: $(PHOENIX_VENV)/.installed-stamp  ## the OTLP receiver the tracing test reads spans back from

jars: venv  ## fetch the broker's jars from Maven Central once (cached afterwards)
	$(PY) -m oncelog broker fetch

# The network drill's fault proxy (drills/faults/toxiproxy.py), built from the Go module
# proxy once; keep TOXIPROXY_VERSION equal to drills.faults.toxiproxy.VERSION.
TOXIPROXY_VERSION := v2.12.0
TOXIPROXY := $(VENV)/bin/toxiproxy-server

$(TOXIPROXY): | $(STAMP)
	GOBIN=$(abspath $(VENV))/gobin go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(VENV)/gobin/server $(TOXIPROXY) && rmdir $(VENV)/gobin

toxiproxy: $(TOXIPROXY)

# The archive tests' S3-compatible server (tests/archive/s3server.py), gofakes3 from the Go
# module proxy, built like Toxiproxy; keep GOFAKES3_VERSION equal to tests/archive's VERSION.
GOFAKES3_VERSION := v1.2.0
GOFAKES3 := $(VENV)/bin/gofakes3

$(GOFAKES3): | $(STAMP)
	GOBIN=$(abspath $(VENV))/gobin-s3 go install github.com/johannesboyne/gofakes3/cmd/gofakes3@$(GOFAKES3_VERSION)
	mv $(VENV)/gobin-s3/gofakes3 $(GOFAKES3) && rmdir $(VENV)/gobin-s3

gofakes3: $(GOFAKES3)  ## the S3-compatible server the archive tests start

# The drills' history checker (drills/linearizability, Go): Porcupine from the Go module
# proxy at the version drills/linearizability/go.mod pins, built like Toxiproxy.
LINEARIZABILITY := $(VENV)/bin/oncelog-linearizability

$(LINEARIZABILITY): drills/linearizability/go.mod drills/linearizability/*.go | $(STAMP)
	cd drills/linearizability && GOFLAGS=-buildvcs=false go build -o $(abspath $(LINEARIZABILITY)) .

linearizability: $(LINEARIZABILITY)

# Two workers (pytest-xdist), each with its own session broker: the Kafka tests mostly wait
# on the log, so a second worker overlaps those waits with the CPU-bound property tests.
# loadgroup: the tests of one xdist_group (the three-node cluster's) share one worker.
test: jars toxiproxy linearizability gofakes3  ## the whole suite against a real broker
	ONCELOG_THOROUGH=1 $(PY) -m pytest -q -n 2 --dist loadgroup --durations=10

# lint-imports checks the layer and fold-purity contracts of pyproject.toml. No cache: it
# keys on mtimes to the second, and a file restored within the second passes on stale imports.
# Rust's cargo as rustup installs it: on PATH, else in ~/.cargo/bin (setup.py looks there too).
CARGO ?= $(shell command -v cargo || echo $(HOME)/.cargo/bin/cargo)
lint: venv
	$(PY) -m ruff check oncelog drills tests bench docsgen
	$(PY) -m ruff format --check oncelog drills tests bench docsgen
	$(PY) -m mypy --strict oncelog drills tests bench docsgen
	$(VENV)/bin/lint-imports --no-cache
	cd native && $(CARGO) fmt --check && PYO3_PYTHON=$(abspath $(PY)) $(CARGO) clippy --release --locked -- -D warnings

format: venv
	$(PY) -m ruff check --fix oncelog drills tests bench docsgen
	$(PY) -m ruff format oncelog drills tests bench docsgen

# The site into site/: the pages of docs/, the reference generated from the code by the hook
# docsgen/hooks.py. --strict fails on any warning (a broken link, a page left out of the nav).
# Offline: no fonts or other assets fetched, no plugin that downloads. The variable mutes
# mkdocs-material's banner about its successor (it is printed on every build). No --quiet:
# mkdocs 1.6 then stops counting warnings, and --strict passes a broken build.
docs: venv  ## the documentation site, mkdocs build --strict
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# docs/reference/{cli,http,configuration,errors}.md, made from the code and committed (links to
# them work in a clone); tests/docs/test_reference.py fails when they are stale.
docs-reference: venv  ## regenerate the committed reference pages from the code
	$(PY) -m docsgen

broker: jars  ## start the local broker (reuses a running one)
	$(PY) -m oncelog broker start

broker-stop: venv
	$(PY) -m oncelog broker stop

demo: jars
	$(PY) -m drills.demo

screenshot: jars  ## regenerate docs/img/timeline.png (needs Debian's chromium, chromium-driver)
	$(PY) -m drills.demo.screenshot

chaos: jars linearizability  ## crash-consistency matrix: SIGKILLed workers x strategies (a few minutes)
	$(PY) -m drills.chaos

bench: jars  ## ledger figures against raw Kafka (a few minutes)
	$(PY) -m bench.bench_ledger

# The clock drill preloads Debian's libfaketime into the brokers' JVMs (.ci/run installs it).
FAKETIME_LIB := /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1

faketime:
	@test -e $(FAKETIME_LIB) || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q faketime libfaketime) || \
		(echo "make: the clock drill needs Debian's faketime and libfaketime (apt-get install faketime libfaketime)" >&2; exit 1)

faults: jars toxiproxy linearizability faketime  ## fuzz, projector kills, a broker restart, failover on 3 nodes, network faults, clock steps
	$(PY) -m drills.faults --tls

soak: jars toxiproxy linearizability  ## an hour of steady load under faults, sampled; writes docs/img/soak.*
	$(PY) -m drills.soak

bench-core: venv
	$(PY) bench/bench_core.py

# The peers need the `bench` extra (asyncpg, dbos), installed here, visibly; PostgreSQL's
# server comes from Debian's `postgresql` package, which the bench only names when missing.
bench-peers: jars  ## oncelog vs a plain Postgres table and DBOS, same broker and workload (~10 min)
	$(PY) -m pip install -q -c constraints.txt -e '.[bench]'
	$(PY) -m bench.peers

# LangGraph's own savers (SQLite, Postgres) come with the `bench` extra, installed here.
bench-checkpoint: jars  ## LangGraph checkpoint put/get_tuple and a 20-superstep agent: oncelog, SQLite, Postgres (~2 min)
	$(PY) -m pip install -q -c constraints.txt -e '.[bench]'
	$(PY) -m bench.bench_checkpoint

bench-echo: jars  ## the floor under a claim and the projector: a Python echo in its place (~2 min)
	$(PY) -m bench.bench_echo

bench-http: jars  ## claims over the HTTP write API from Node and Python, beside the SDK (~2 min)
	$(PY) -m bench.bench_http

bench-fleet: jars  ## 1 busy + 15 idle clients (own processes), alone / 1 / 2 projectors (~3 min)
	$(PY) -m bench.bench_fleet

# The TypeScript SDK as an npm tarball that any project installs with
# `npm install /path/to/dist/oncelog-sdk-<version>.tgz` (docs/typescript-sdk.md).
sdk-ts:  ## the TypeScript SDK's package: dist/oncelog-sdk-<version>.tgz
	mkdir -p dist
	cd sdk/typescript && npm ci --no-audit --no-fund --prefer-offline && npm run build
	cd sdk/typescript && npm pack --pack-destination ../../dist

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis site build native/target
	find oncelog -name '*.so' -delete
