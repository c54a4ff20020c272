# The two commands: `make demo` (the local profile end to end) and `make test` (the whole suite).
.PHONY: setup demo test lint bench contract openapi crash config-docs clients

setup: .venv/.installed
.venv/.installed: pyproject.toml scripts/setup.sh clients/typescript/package-lock.json
	bash scripts/setup.sh

demo: setup
	WORLDMM_HOME=$${WORLDMM_HOME:-$(CURDIR)/.worldmm} .venv/bin/worldmm demo

lint: setup
	.venv/bin/ruff check worldmm handlers gpu_worker tests bench scripts
	.venv/bin/mypy worldmm handlers gpu_worker
	.venv/bin/lint-imports
	# every checkov finding on the template is fixed or skipped inline with its reason (docs/security.md)
	BC_SKIP_MAPPING=TRUE .tools/checkov/bin/checkov -f template.yaml --compact --quiet --skip-download

test: lint
	.venv/bin/python scripts/run_tests.py
	.venv/bin/python scripts/sam_build_sizes.py --limit-mb 200

bench: setup
	.venv/bin/python -m bench.run_all

# The long API contract run before a release: schemathesis, every check and phase, against `worldmm serve`.
contract: setup
	.venv/bin/python -m bench.contract --max-time $${CONTRACT_SECONDS:-300} --out bench/results/contract.json

# The OpenAPI document from the route table's models, written to openapi.json and docs/openapi.json.
openapi: setup
	.venv/bin/python -m worldmm.gateway.openapi

# The app developers' clients from openapi.json: clients/typescript/src/schema.ts (openapi-typescript) and
# clients/python/worldmm_client (openapi-python-client); tests fail when a committed client differs from a fresh
# generation.
clients: openapi
	cd clients/typescript && npm exec -- openapi-typescript ../../openapi.json --output src/schema.ts
	.venv/bin/python scripts/gen_python_client.py

# docs/configuration.md from Settings (worldmm/config.py) and template.yaml; a unit test fails when it is stale.
config-docs: setup
	.venv/bin/python scripts/gen_config_reference.py

# Kill every write path at many points, recover as an operator would, check nothing is lost (report JSON).
crash: setup
	.venv/bin/python -m bench.crash
