"""gunicorn's settings for CommHub; gunicorn reads this file from the directory it starts in (the
project root, as README's Production command runs it).

Every line gunicorn and its uvicorn workers log (access lines with their query strings, errors)
passes the filter that rewrites bearer tokens to `ntok_[redacted]` (commhub/serving.py).
"""

logger_class = "commhub.serving.GunicornLogger"
