"""Evaluation: model presets and adapters, prompts, condition plans, answer parsing, the concurrent cached
resumable runner, the simulated listener and power analysis. Remote-call safety lives in core/jobs/remote.py."""
