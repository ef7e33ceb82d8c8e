"""The model methods (rerankers, VisRet, judge panels): their registry, their jobs and the side pane's box."""
