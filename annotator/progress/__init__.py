"""How far each query is: the side pane's and the dashboard's figures (figures), and the stopping signals
(stopping), read off annotator.completeness's checks and claims. Figures that read every label are computed in the
background, never in a request."""
