"""Lambda entry points outside the HTTP API (`api/`): each builds nothing itself, takes the process's
ports from the composition root (`worldmm.services`) and hands one core function what it uses."""
