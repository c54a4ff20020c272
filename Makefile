# The two commands: `make demo` (the local profile end to end) and `make test` (the whole suite).
.PHONY: setup demo test lint bench crash

setup: .venv/.installed
.venv/.installed: pyproject.toml scripts/setup.sh
	bash scripts/setup.sh

demo: setup
	WORLDMM_HOME=$${WORLDMM_HOME:-$(CURDIR)/.worldmm} .venv/bin/worldmm demo

lint: setup
	.venv/bin/ruff check worldmm api gpu_worker tests bench scripts
	.venv/bin/mypy worldmm api gpu_worker
	.venv/bin/lint-imports

test: lint
	.venv/bin/python scripts/run_tests.py
	.venv/bin/python scripts/sam_build_sizes.py --limit-mb 200

bench: setup
	.venv/bin/python -m bench.run_all

crash: setup
	.venv/bin/python -m bench.crash
