"""What every other package stands on: errors, artifact names and safe writes,
paths, configuration, memory, interrupts, streaming, the Keras backend.

Imports nothing else of ``pipeline``."""
