# Benchwarmers in one container: gateway, admin API, dashboard and MCP on one port, the data
# folder a volume. See docs/HOSTING.md.
#
#   python3.12 -m pip wheel . -w wheels      # the project and its dependencies, as wheels (on Linux,
#                                            # with the base's Python: 3.12 for python:3.12-slim)
#   docker build -t benchwarmers .           # installs from wheels/, no network needed
#
# INSTALL_FROM picks where the package comes from:
#   auto    (default) wheels/ when it holds wheels that fit the base, else the source with the network
#           (a remote builder such as Fly.io's, Render's or Railway's, where wheels/ is not in the clone)
#   wheels  only wheels/, with --no-index (refuses to build without them; what CI uses)
#   source  the source in the build context, dependencies from the index
ARG BASE=python:3.12-slim

FROM ${BASE} AS build
ARG INSTALL_FROM=auto
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
COPY . /src
RUN set -eu; \
    python3 -m venv /opt/benchwarmers; \
    pip=/opt/benchwarmers/bin/pip; \
    have_wheels=no; \
    if ls /src/wheels/benchwarmers-*.whl >/dev/null 2>&1; then have_wheels=yes; fi; \
    case "$INSTALL_FROM:$have_wheels" in \
      wheels:yes) "$pip" install --no-index --find-links /src/wheels benchwarmers ;; \
      auto:yes) "$pip" install --no-index --find-links /src/wheels benchwarmers \
                || { echo "wheels/ does not fit this base (another Python or platform): installing from the source" >&2; \
                     "$pip" install /src; } ;; \
      source:*|auto:no)    "$pip" install /src ;; \
      wheels:no) echo "INSTALL_FROM=wheels but wheels/ holds no benchwarmers wheel: run 'python -m pip wheel . -w wheels' first" >&2; exit 1 ;; \
      *) echo "INSTALL_FROM is auto, wheels or source (not '$INSTALL_FROM')" >&2; exit 1 ;; \
    esac; \
    /opt/benchwarmers/bin/benchwarmers --version

FROM ${BASE}
# The user the container starts as. The server itself always runs as 10001: started as root (for a
# host whose volumes mount owned by root), the entrypoint hands /data to 10001 and drops to it.
ARG RUN_AS=10001:10001
COPY deploy/docker-entrypoint.sh /usr/local/bin/benchwarmers-entrypoint
# A plain user with a fixed id (so a bind-mounted data folder can be chown'ed to 10001 on the host).
# Written straight into passwd/group: a minimal base has no useradd.
RUN set -eu; \
    chmod 755 /usr/local/bin/benchwarmers-entrypoint; \
    echo "bench:x:10001:10001:Benchwarmers:/home/bench:/usr/sbin/nologin" >> /etc/passwd; \
    echo "bench:x:10001:" >> /etc/group; \
    mkdir -p /home/bench /data /config; \
    chown 10001:10001 /home/bench /data /config; \
    chmod 700 /data /config
COPY --from=build /opt/benchwarmers /opt/benchwarmers

# The data folder (SQLite, WAL) is the volume; the keys file, if you save keys through the CLI or
# the dashboard rather than the environment, goes to /config (never the data folder). Provider keys
# come from BENCHWARMERS_KEY_<NAME> and the admin token from BENCHWARMERS_ADMIN_TOKEN at run time:
# neither is ever written into the image.
ENV PATH=/opt/benchwarmers/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HOME=/home/bench \
    BENCHWARMERS_HOME=/data \
    BENCHWARMERS_CONFIG=/config \
    BENCH_BIND=0.0.0.0 \
    BENCH_PORT=8122
VOLUME /data
USER ${RUN_AS}
WORKDIR /home/bench
EXPOSE 8122

# Listening on 0.0.0.0 is beyond loopback, so the server refuses to start (exit 2, one line on
# stderr) unless BENCHWARMERS_ADMIN_TOKEN (16+ characters) is set. The health check needs no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('BENCH_PORT', '8122'), timeout=4)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/benchwarmers-entrypoint"]
CMD ["benchwarmers", "serve"]
