#!/usr/bin/env bash
# MariaDB for the MySQL/MariaDB warehouse tests: Debian's server binaries only.
#
# The tests start a private server in a temporary data directory (mariadb-install-db +
# mariadbd on a loopback port, like the embedded Postgres); nothing here starts or enables
# the system service. Installed only when missing and we are root (CI: a fresh Debian 12 as
# root); otherwise this says how and `make setup` goes on (the MariaDB tests then skip,
# saying why).
set -euo pipefail

packages=${MARIADB_PACKAGES:-"mariadb-server"}

if command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]]; then
  echo "mariadb: $(/usr/sbin/mariadbd --version 2>/dev/null | head -1) already installed"
  exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "mariadb: installing $packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # policy-rc.d (unless one is there): install the binaries without starting the service
  placed=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    placed=1
  fi
  # shellcheck disable=SC2086 # the package list is words
  status=0
  apt-get install -y -q --no-install-recommends $packages >/dev/null || status=$?
  [[ -n $placed ]] && rm -f /usr/sbin/policy-rc.d
  [[ $status -eq 0 ]] || exit "$status"
  echo "mariadb: $(/usr/sbin/mariadbd --version 2>/dev/null | head -1) installed"
  exit 0
fi
cat >&2 <<MSG
mariadb: mariadb-server is not installed, and this is not root with apt-get:
mariadb:   sudo apt-get install -y --no-install-recommends $packages
mariadb: until then the MySQL/MariaDB warehouse tests skip.
MSG
