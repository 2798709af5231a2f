# syntax=docker/dockerfile:1
# The Facet image: `facet controller` on Debian bookworm.
#
#   docker build -t <registry>/facet:0.1.0 .
#
# The build stage installs the build dependencies with scripts/setup.sh, as CI
# does, and builds the facet target in Release. The runtime stage holds the
# stripped binary and only the shared libraries it links.

FROM debian:bookworm AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
# setup.sh alone first, so the dependency layer survives source edits.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# /root/.cache holds ccache's objects and the pinned Envoy API tarball
# (scripts/fetch-envoy-api.sh); keeping it between builds saves most of the
# compile and the npm download.
RUN --mount=type=cache,target=/root/.cache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DFACET_BUILD_TESTS=OFF -DFACET_BUILD_BENCHMARKS=OFF \
    && scripts/build.sh facet \
    && cmake --install build --prefix /opt/facet --strip

FROM debian:bookworm-slim
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The runtime packages of the libraries facet links (ldd, then dpkg -S): gRPC
# (which brings libprotoc32), protobuf, abseil, cpprestsdk (the Kubernetes
# client), yaml-cpp, spdlog and fmt, re2, c-ares, OpenSSL, zlib. Their names
# carry the soname, so bookworm pins the ABI.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libc-ares2 libcpprest2.10 libfmt9 libgrpc++1.51 libgrpc29 \
      libprotobuf32 libre2-9 libspdlog1.10 libssl3 libyaml-cpp0.7 zlib1g \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/facet/bin/facet /usr/local/bin/facet
# Fail here, not in the cluster, if a library is missing.
RUN if ldd /usr/local/bin/facet | grep 'not found'; then \
      echo "facet needs a library the runtime stage does not install" >&2; exit 1; \
    fi \
    && /usr/local/bin/facet version \
    && groupadd --gid 65532 facet \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin facet
USER 65532:65532
# 18000: xDS (gRPC, h2c). 18080: admin HTTP (/healthz, /readyz, /metrics).
EXPOSE 18000 18080
ENTRYPOINT ["/usr/local/bin/facet", "controller"]
