"""How far each query is: the side pane's figures, completeness checks and their claims (frames, checks, certify),
the stopping signals (stopping), the dashboard. Figures that read every label are computed in the background,
never in a request."""
