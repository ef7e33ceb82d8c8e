"""A benchmark's releases: folders of files frozen at their making (publish.py: make, list, compare, verify, and
the jobs that make them in the background), their dataset card (card.py, from facts.py), croissant.json
(croissant.py), and the files beyond INQUIRE's CSVs (files.py: qrels, Parquet, SHA256SUMS); the staff's releases
page is annotator/web/releases.py. Above inquire/, whose exports a release carries."""
