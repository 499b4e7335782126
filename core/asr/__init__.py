"""ASR screening of synthesized clips: backends (OpenAI transcription, Gemini, OpenAI-compatible servers, local
faster-whisper), language-aware normalization, jiwer error rates, the BiasInEar WER intervals."""
