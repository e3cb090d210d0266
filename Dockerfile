# One image for every Gatehouse process; compose.yaml picks the command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HOST=0.0.0.0

WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
COPY migrations ./migrations
RUN pip install --no-compile -e . \
    && useradd --system --no-create-home gatehouse

USER gatehouse
CMD ["python", "-m", "billing"]
