# The oncelog image for docker-compose.fleet.yml's projectors (`oncelog serve`) and for
# running the CLI next to a cluster. No Java: it talks to the brokers named by
# ONCELOG_BOOTSTRAP_SERVERS.
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY oncelog ./oncelog
RUN pip install --no-cache-dir -c constraints.txt . \
    && useradd --create-home oncelog && mkdir /data && chown oncelog /data
USER oncelog
ENTRYPOINT ["oncelog"]
CMD ["serve"]
