"""How far each query is: the side pane's figures, the recall estimate (stopping), the dashboard. Figures
that read every label are computed in the background, never in a request."""
