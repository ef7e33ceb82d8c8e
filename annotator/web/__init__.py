"""annotator's pages: every HTML view, form and fragment, above every room (web/ and api/ may import any room; no
room imports them). One module a page family: the query list (home.py, query_form.py), the labeling page
(labeling.py, labeling_forms.py), the map, the team's pages and plot, the dashboard (progress.py, tracking_form.py),
the side pane's model box (model_box.py, methods.py), the exports and the releases page."""
