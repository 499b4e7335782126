"""The benchmark's vocabulary: items, evaluation conditions, language codes."""
