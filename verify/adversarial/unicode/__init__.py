"""Unicode-table sweep: probes derived from each vocabulary, attribution, planted table faults."""
