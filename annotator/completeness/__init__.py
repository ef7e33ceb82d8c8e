"""Whether a query, or the benchmark, has found what there is to find: the frames a claim speaks of (frames), the
random checks drawn over them, one model for a query's and the benchmark's (checks: the draw and the decision, by
the write that settles a check's last sampled pair; sample_progress: its looks; sampled: what it asks of the
annotators), their statistics (certify) and the per-look miss rate they are tested at (looks), the claims and
reports read off them (claims for a query's, benchmark for the benchmark's), and what a team does next (advice)."""
