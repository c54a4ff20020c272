"""App events (issue 65): what a wearer's phone or a backend hangs its work on instead of polling."""
