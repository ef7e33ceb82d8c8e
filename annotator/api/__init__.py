"""The REST API (DRF): queries, labels, candidates, adjudication, and the tokens that sign scripts in."""
