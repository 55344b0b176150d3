# The plantstore server as a container image: a static binary on
# distroless/static (CA certificates for https:// webhooks, no shell), run
# as the unprivileged user 65532, keeping its SQLite file in the /data
# volume. See docs/operations.md#container-image.
#
#   docker build --build-arg COMMIT=$(git rev-parse HEAD) -t plantstore .
#   docker run -d --name plantstore -p 8080:8080 -v plantstore-data:/data plantstore
#   docker logs plantstore    # the generated token, unless PLANTSTORE_TOKENS or -token-file is given

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# deploy/docker_test.go runs this line as it stands (only its -o changed)
# and checks that it makes a static, stripped binary: keep it one line.
# .git is not sent to the build (.dockerignore), so the commit comes in as
# a build argument: docker build --build-arg COMMIT=$(git rev-parse HEAD) .
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.buildCommit=${COMMIT}" -o /out/plantstore ./cmd/plantstore
RUN mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/plantstore /plantstore
# Owned by the image's user, so that a new named volume, which starts as
# a copy of this directory, is writable by it.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# Settings as variables rather than arguments: "docker run IMAGE -flag"
# replaces the image's arguments whole, while -e PLANTSTORE_DB=… or an
# argument changes one setting and keeps the others. The health check
# runs in the same environment, so it finds PLANTSTORE_ADDR's port.
ENV PLANTSTORE_ADDR=0.0.0.0:8080 \
    PLANTSTORE_DB=/data/plantstore.db \
    PLANTSTORE_LOG_FORMAT=json
VOLUME /data
EXPOSE 8080
# The image has no curl: the binary is its own probe. /readyz fails while
# the storage does not take writes; see docs/operations.md#container-image
# for /healthz instead, and for the probes of an orchestrator.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/plantstore", "-probe", "/readyz"]
ENTRYPOINT ["/plantstore"]
