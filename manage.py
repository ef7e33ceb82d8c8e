#!/usr/bin/env python
"""Django's command-line utility for Quire."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:  # a setting to fix: one line, not a traceback
        sys.exit(f"manage.py: {error}")


if __name__ == "__main__":
    main()
