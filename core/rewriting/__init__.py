"""Question rewriting (BiasInEar 2.1-2.2, App. B.1/B.3): LLM rewrites into spoken-readable text, validation,
diff-based flagging, review decisions, and Table 9."""
