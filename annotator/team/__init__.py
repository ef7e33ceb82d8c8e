"""The team room: blind overlap samples, agreement between annotators, and adjudication of their
disagreements. What a blind annotator may see is the write room's rule (annotator.labels.sealed)."""
