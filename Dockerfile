# syntax=docker/dockerfile:1
# The Facet image: `facet` on Debian bookworm, running `facet controller` by
# default.
#
#   scripts/build-image.sh [TAG]         # buildah, from source, as a user would
#   docker build -t <registry>/facet:0.1.0 .
#
# The build stage installs the Debian -dev packages facet links, fetches the
# pinned Envoy API protos (scripts/fetch-envoy-api.sh) and builds the facet
# target in Release from the source tree (filtered by .dockerignore). The
# runtime stage holds the stripped binary and only the shared libraries it
# links, and runs as a non-root user.
#
# CI packages the binary it has just tested instead of compiling it a second
# time: `scripts/build-image.sh --binary build/controller/cli/facet` builds
# the `prebuilt` target, whose context is a directory holding only that
# binary, stripped (the build stage is then not run). Both images are the
# `runtime` stage with one binary added; test/image/dockerfile_packages_test.sh
# checks the build stage's packages without building it.

FROM debian:bookworm AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# What facet (not the tests) needs to build: scripts/setup.sh's facet_packages
# (test/image/dockerfile_packages_test.sh checks that they agree). curl fetches the Envoy
# API tarball where npm is not installed.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config ca-certificates curl openssl \
      libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libre2-dev libssl-dev libcpprest-dev libyaml-cpp-dev libspdlog-dev \
      libcpp-httplib-dev libboost-dev prometheus-cpp-dev libxxhash-dev libyaml-dev \
    && rm -rf /var/lib/apt/lists/*
# The source tree, filtered by .dockerignore. A COPY, not a bind mount: its
# content is part of the layer cache key, so a changed tree is rebuilt.
COPY . /src
# /var/cache/facet holds ccache's objects and the pinned Envoy API tarball:
# a cache mount with `docker build`; scripts/build-image.sh mounts its own
# persistent directories there. Either way a rebuild compiles only what
# changed and downloads nothing. The build tree is removed at the end, so
# this layer adds only /opt/facet.
ENV CCACHE_DIR=/var/cache/facet/ccache FACET_CACHE_DIR=/var/cache/facet/facet \
    CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=2G
RUN --mount=type=cache,target=/var/cache/facet \
    ccache --zero-stats >/dev/null \
    && cmake -S /src -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DFACET_BUILD_TESTS=OFF -DFACET_BUILD_BENCHMARKS=OFF \
    && ninja -C /tmp/build facet \
    && cmake --install /tmp/build --prefix /opt/facet --strip \
    && ccache --show-stats | grep -E '^ *(Hits|Misses):' | head -2 \
    && rm -rf /tmp/build

FROM debian:bookworm-slim AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The runtime packages of the libraries facet links (ldd, then dpkg -S): gRPC
# (which brings libprotoc32), protobuf, abseil, cpprestsdk (the Kubernetes
# client), cpp-httplib (`facet explain`'s client), yaml-cpp, spdlog and fmt, re2,
# c-ares, OpenSSL, zlib, prometheus-cpp's core (/metrics), xxHash (digests),
# libyaml (the YAML reader's parser). Their names carry the soname, so
# bookworm pins the ABI. ca-certificates: the in-cluster API server's CA comes
# from the service account, but a kubeconfig may name a public one.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libabsl20220623 libc-ares2 libcpp-httplib0.11 libcpprest2.10 libfmt9 \
      libgrpc++1.51 libgrpc29 libprotobuf32 libprometheus-cpp-core1.0 libre2-9 libspdlog1.10 \
      libssl3 libxxhash0 libyaml-0-2 libyaml-cpp0.7 zlib1g \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
    && groupadd --gid 65532 facet \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin facet
USER 65532:65532
# 18000: xDS (gRPC, h2c). 18080: admin HTTP (/healthz, /readyz, /metrics).
EXPOSE 18000 18080
ENTRYPOINT ["/usr/local/bin/facet", "controller"]

# CI's image: the binary CI tested (scripts/build-image.sh --binary PATH).
FROM runtime AS prebuilt
COPY facet /usr/local/bin/facet
# Fail here, not in the cluster, if a library is missing.
RUN if ldd /usr/local/bin/facet | grep 'not found'; then \
      echo "facet needs a library the runtime stage does not install" >&2; exit 1; \
    fi \
    && facet version

# The default target: facet built from this tree by the build stage.
FROM runtime
COPY --from=build /opt/facet/bin/facet /usr/local/bin/facet
# Fail here, not in the cluster, if a library is missing.
RUN if ldd /usr/local/bin/facet | grep 'not found'; then \
      echo "facet needs a library the runtime stage does not install" >&2; exit 1; \
    fi \
    && facet version
