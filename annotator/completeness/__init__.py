"""Whether a query, or the benchmark, has found what there is to find: the frames a claim speaks of (frames), the
random checks drawn over them, per query (checks) and pooled over queries (benchmark), each decided by the write
that settles its last sampled image (sampled), their statistics (certify) and the per-look miss rate they are tested
at (looks), the claims and reports read off them (claims), and what a team does next (advice)."""
