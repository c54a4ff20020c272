"""Lambda entry points for SQS, S3, schedules and invokes: each builds nothing itself, takes the process's
ports from the composition root (`worldmm.services`) and hands one core function what it uses."""
