"""`verify certify`: bounded-exhaustive parity over the alphabet of a pattern (docs/certify.md)."""
