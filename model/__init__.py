"""The bottom layer: the config model, the instance catalog, versions, cost and stack files. It
imports nothing of the project above it."""
