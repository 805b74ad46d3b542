# Sourced by container-test.sh and k8s-play.sh: podman as these machines need it, written
# once. Needs CACHE (the scripts' cache folder).
#
# runc (crun refuses cgroup v1 "hybrid mode" here), cgroupfs (no systemd), and no default
# ulimits: raising RLIMIT_NOFILE past the sandbox's hard limit fails every start.
export CONTAINERS_CONF="$CACHE/containers.conf"
mkdir -p "$CACHE"
cat >"$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
podman() { command podman --runtime /usr/sbin/runc "$@"; }
export -f podman
# Without systemd podman logs that it cannot schedule health checks: expected, filtered.
quiet() { grep -v -e 'unable to get systemd connection' -e 'level=warning' -e 'syslog' || true; }
