"""Per-Unicode-version character data (general categories for Unicode 11-18), shipped with
the package (``data/``; built by ``python -m tools.build_unicode_data``): read by the
Unicode sweep's attribution, its probes and the planted table-fault engines."""
