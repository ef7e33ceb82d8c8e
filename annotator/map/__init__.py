"""The map of the collection: its layout read for a query or for staff, its points and scores as the page draws
them, the lasso's filter, and the staff's map page. The layout itself is computed by search (manage.py map_layout)."""
