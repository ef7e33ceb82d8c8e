"""INQUIRE's files: importing its queries and annotations, and exporting the benchmark's CSVs."""
