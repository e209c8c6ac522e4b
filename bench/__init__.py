"""Benchmarks for wiremcp (never collected by pytest). See bench/README.md."""
