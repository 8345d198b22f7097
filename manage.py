#!/usr/bin/env python
"""Django's command-line utility for CommHub."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
    from django.core.management import execute_from_command_line

    from commhub import tracing

    tracing.configure()  # off unless OTEL_* say so: a command's work (a sweep's events) traced as the server's

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
