"""The annotator's page: the grid of candidates in the chosen ranking, saves and Submit, and the uploaded
examples a ranking learns from. Writes go through annotator.labels."""
