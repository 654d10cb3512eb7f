# session-controller image: session-controller (the entrypoint) and sessionctl.
#
#   docker build -t REGISTRY/session-controller:TAG .
#
# Two stages on Debian 12: the build stage has the compiler and the -dev
# packages (hack/install-deps.sh lists the same ones); the runtime stage only
# the shared libraries the binaries load. hack/check-image-deps.sh checks the
# runtime list below against `ldd` of the binaries (test/e2e/deploy_manifests.sh
# runs it): keep the package names one per line between the markers.

FROM debian:12-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config \
      libcurl4-openssl-dev libyaml-dev libjson-c-dev libevent-dev \
      libssl-dev libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make clean \
 && make -j"$(nproc)" bin/session-controller bin/sessionctl \
 && install -d /out \
 && install -m 0755 -s bin/session-controller bin/sessionctl /out/

FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
# runtime-packages-begin
      ca-certificates \
      libcurl4 \
      libevent-2.1-7 \
      libjson-c5 \
      libsqlite3-0 \
      libssl3 \
      libyaml-0-2 \
# runtime-packages-end
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/session-controller /out/sessionctl /usr/local/bin/
# A place for a sqlite store when the image runs outside Kubernetes:
#   docker run -v sc-data:/var/lib/session-controller IMAGE \
#     --store sqlite:/var/lib/session-controller/sessions.db ...
RUN install -d -o 65532 -g 65532 -m 0750 /var/lib/session-controller
WORKDIR /var/lib/session-controller
# 65532 is the conventional "nonroot" ID; no home, no shell needed. The
# Deployment sets runAsNonRoot and a read-only root filesystem: with
# --store kube the controller writes nothing to disk.
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/session-controller"]
# sessionctl: docker run --entrypoint sessionctl IMAGE ...
CMD ["--help"]
