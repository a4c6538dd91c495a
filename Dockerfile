# syntax=docker/dockerfile:1
# stormsim's container image: a static binary on distroless, running as the
# image's nonroot user (uid 65532, which the Kubernetes manifests expect).
#   docker build -t ghcr.io/you/stormsim:v1 --build-arg VERSION=v1 .
# The binary is the only file: the canned experiments, fonts for the plots
# and the manifests' templates are embedded in it.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: a static binary, so the runtime image needs no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
    -o /out/stormsim ./cmd/stormsim

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/stormsim /usr/local/bin/stormsim
USER nonroot:nonroot
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/stormsim"]
CMD ["help"]
