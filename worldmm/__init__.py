"""WorldMM Live Memory: captions, entities, triples, visual embeddings and an answering agent."""

__version__ = "0.1.0"
