"""Report writers: manifest.json, summary.md (and later JUnit / HTML)."""
