"""Benchmarks for mcpwire (never collected by pytest). See bench/README.md."""
