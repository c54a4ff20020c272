"""Helpers the tests share: real servers (harness), adapters, fixtures' builders, scripted-model scripts."""
