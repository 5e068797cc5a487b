"""Metamorphic checks of one engine: repeat, history, batch, threads, roundtrip, sessions, stress."""
