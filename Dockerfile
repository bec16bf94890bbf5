# The gpulens container image (docs: README, "Container image").
#
#   docker build -t registry.example.com/gpulens:0.1.0 .
#   buildah bud -t registry.example.com/gpulens:0.1.0 .
#
# Stage 1 builds the agent on Debian 12. Stage 2 is an empty image holding a
# root of Debian 12 packages with only the agent's runtime libraries, made
# by scripts/image.sh --root-only: the same root the daemonless build
# (scripts/image.sh, debootstrap + umoci) packs, so both images hold the
# same files. No shell, no package manager; runs as user 65532.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN scripts/deps.sh && apt-get install -y -qq --no-install-recommends debootstrap python3 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake --preset release -DGPULENS_BUILD_BENCH=OFF \
    && cmake --build --preset release --target gpulens \
    && scripts/image.sh --root-only --binary build/release/gpulens --out /image

FROM scratch
COPY --from=build /image/rootfs/ /
ENV PATH=/usr/bin:/bin GPULENS_SCENARIOS=/usr/share/gpulens/scenarios \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
USER 65532:65532
EXPOSE 9400/tcp
LABEL org.opencontainers.image.title=gpulens org.opencontainers.image.source=https://github.com/gpulens/gpulens
ENTRYPOINT ["/usr/bin/gpulens", "serve"]
CMD ["--listen=0.0.0.0:9400"]
