# Test only (scripts/container-test.sh): the edge for the compose stack where the public
# nginxinc/nginx-unprivileged:1.26.3-alpine image cannot be pulled. It runs the same nginx
# release, built by `make edge` (scripts/build_edge.sh, HTTP/2 + gRPC proxy), and behaves
# like the stock image as infra/compose.yaml uses it: uid 101, templates in
# /etc/nginx/templates/*.template filled from the environment (NGINX_ENVSUBST_FILTER) into
# /etc/nginx/conf.d/ at start, pid and temp files under /tmp, `nginx -t` works.
# The context is assembled by the script: tandem-nginx, edge-entrypoint.sh, nginx.conf.
# conf.d is a tmpfs in compose; podman 4.3 gives a tmpfs the image directory's mode with
# root as owner, so the directory is 1777 here (Docker's tmpfs default) to stay writable.
ARG BASE_IMAGE=localhost/tandem/base:bookworm-py311
FROM ${BASE_IMAGE}
COPY tandem-nginx /usr/local/sbin/tandem-nginx
COPY nginx.conf /etc/nginx/nginx.conf
COPY edge-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN groupadd --system --gid 101 nginx \
 && useradd --system --uid 101 --gid nginx --no-create-home --shell /usr/sbin/nologin nginx \
 && mkdir -p /etc/nginx/templates /etc/nginx/conf.d \
 && chown nginx:nginx /etc/nginx/conf.d \
 && chmod 1777 /etc/nginx/conf.d \
 && printf '#!/bin/sh\nexec /usr/local/sbin/tandem-nginx -p /tmp/ -e stderr -c /etc/nginx/nginx.conf "$@"\n' \
      >/usr/local/bin/nginx \
 && chmod 755 /usr/local/bin/nginx /usr/local/bin/docker-entrypoint.sh /usr/local/sbin/tandem-nginx
USER 101
EXPOSE 50050
STOPSIGNAL SIGQUIT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["nginx", "-g", "daemon off;"]
