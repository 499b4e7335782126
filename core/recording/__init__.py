"""Recording real speakers (BiasInEar Section 5.1), Qt-free: speaker profiles and consent (`speakers`), scripted
prompts (`prompts`), the recorder over sounddevice's callback stream with a fake for tests (`recorder`), quality
checks on every take (`quality`), stored takes (`takes`), voices cloned from them (`cloning`), and their SQL
(`store`). See docs/recording.md."""
