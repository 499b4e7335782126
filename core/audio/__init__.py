"""Audio: decoding and encoding, signal processing, TTS backends, synthesis jobs and condition assembly."""
