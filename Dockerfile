# One image for every Gatehouse process; compose.yaml picks the command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HOST=0.0.0.0

WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
# The services only: the simulators (services/simulators) stay out of the image.
COPY services/billing ./services/billing
COPY services/botedge ./services/botedge
COPY services/panel-api ./services/panel-api
COPY migrations ./migrations
# The bot's message catalogs compiled from their .po sources.
RUN pip install --no-compile -e . \
    && pybabel --quiet compile --domain bot --directory services/botedge/botedge/locales \
    && useradd --system --no-create-home gatehouse

USER gatehouse
CMD ["python", "-m", "billing"]
