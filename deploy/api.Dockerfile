# syntax=docker/dockerfile:1
# snapq API image. Build from the repository root:
#   docker build -f deploy/api.Dockerfile -t snapq-api .
# Migrations and the dashboard are embedded in the binary.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/snapq-api ./cmd/api

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin snapq
COPY --from=build /out/snapq-api /usr/local/bin/snapq-api
USER 10001:10001
ENV SNAPQ_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/snapq-api"]
