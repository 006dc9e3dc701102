# syntax=docker/dockerfile:1
# snapq worker image: the worker binary plus Debian's Chromium and fonts.
# Build from the repository root:
#   docker build -f deploy/worker.Dockerfile -t snapq-worker .
# Chromium comes only from Debian's package. The base image tag fixes the
# Debian release; to pin the exact Chromium build as well, pass
#   --build-arg CHROMIUM_VERSION=<version from `apt-cache policy chromium`>
# (Debian drops superseded security builds, so a pinned version stops
# building once it is replaced; update it then).
# Run with a 1 GiB /dev/shm (compose: shm_size: 1g) or Chromium crashes on
# large pages, and under deploy/seccomp/chromium.json
#   docker run --security-opt seccomp=deploy/seccomp/chromium.json ...
# so that Chromium can build its sandbox (Docker's default profile refuses the
# user namespaces it needs; SNAPQ_CHROME_NO_SANDBOX=true is the fallback).

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/snapq-worker ./cmd/worker

FROM debian:bookworm-slim
ARG CHROMIUM_VERSION=
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "chromium${CHROMIUM_VERSION:+=$CHROMIUM_VERSION}" \
      fonts-liberation fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji \
      poppler-utils \
      tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && /usr/bin/chromium --version \
 && pdftotext -v \
 && useradd --uid 10001 --user-group --create-home --home-dir /home/snapq --shell /usr/sbin/nologin snapq \
 && useradd --system --no-create-home --shell /usr/sbin/nologin snapq-chrome
COPY --from=build /out/snapq-worker /usr/local/bin/snapq-worker
# Chromium writes its profile and crash data under $HOME. The worker runs as
# 10001 and starts Chromium as itself; run as root (--user 0) it would start
# Chromium as snapq-chrome instead (SNAPQ_CHROME_USER), since Chromium does not
# sandbox itself as root.
USER 10001:10001
ENV HOME=/home/snapq SNAPQ_CHROME_BIN=/usr/bin/chromium
# tini is PID 1: it forwards SIGTERM to the worker (graceful drain) and reaps
# Chromium helper processes orphaned when a browser is recycled or crashes.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/snapq-worker"]
