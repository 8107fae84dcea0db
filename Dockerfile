# syntax=docker/dockerfile:1
# The manager image: a static binary on distroless, run as non-root.
# Build with `make docker-build` (IMG=webchecker:<appVersion> by default;
# needs BuildKit, the default builder since Docker 23).

# Build stage: runs on the builder's platform and cross-compiles for the
# target one, so multi-platform builds need no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
# The release and commit reported by webchecker_build_info (make
# docker-build passes the chart's appVersion and git's HEAD).
ARG VERSION
ARG REVISION
WORKDIR /src
COPY go.mod go.sum ./
# Only the packages the manager is built from (.dockerignore keeps the
# context to these, too).
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY probing/ probing/
COPY sharding/ sharding/
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -tags grpcnotrace -ldflags="-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/manager ./cmd/manager

# Run stage: no shell, no package manager, CA certificates for probing
# https targets, user 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="webchecker" \
      org.opencontainers.image.description="Kubernetes operator that probes HTTP(S) servers outside the cluster" \
      org.opencontainers.image.source="https://github.com/networkio/webchecker" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /
COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
