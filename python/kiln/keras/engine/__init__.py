"""Internals of the functional API: symbolic Keras tensors and nodes."""
