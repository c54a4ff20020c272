"""Import one handler module as the Lambda runtime does, then log one line through every library logger loaded.

Usage: log_probe.py HANDLER_MODULE [LIBRARY_MODULE ...]. Run with the function's environment only. Like the
python3.12 runtime, the root logger has a plain-text handler before anything is imported; a library line
that reaches it unfiltered prints as `PLAIN ...`. Library modules named after the handler are imported
after its `Logger()` exists (the other import order). A JSON summary goes to stderr.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys

logging.basicConfig(stream=sys.stdout, format="PLAIN %(name)s %(message)s")


def main() -> None:
    handler_name, *later = sys.argv[1:]
    handler_module = importlib.import_module(handler_name)
    for name in later:
        importlib.import_module(name)
    from aws_lambda_powertools import Logger

    probed = []
    for name, module in sorted(sys.modules.items()):
        if module is None or name == handler_name or not name.startswith(("worldmm.", "handlers.")):
            continue
        for attribute in ("logger", "_logger"):
            logger = getattr(module, attribute, None)
            if isinstance(logger, Logger):
                logger.info("probe", extra={"probe": name})
                probed.append(name)
    sys.stdout.flush()
    print(json.dumps({"handler_service": handler_module.logger.service, "probed": probed}), file=sys.stderr)


if __name__ == "__main__":
    main()
