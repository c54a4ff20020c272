"""The function invoker port and its adapters (Lambda, in-process)."""
