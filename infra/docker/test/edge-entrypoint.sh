#!/bin/sh
# As the stock nginx image's 20-envsubst-on-templates.sh: fill each
# /etc/nginx/templates/*.template with the environment variables whose names match
# NGINX_ENVSUBST_FILTER (nginx's own $names stay) into /etc/nginx/conf.d/*.conf.
set -eu
python3 - <<'PY'
import os, re, pathlib
flt = re.compile(os.environ.get("NGINX_ENVSUBST_FILTER", ""))
names = {k: v for k, v in os.environ.items() if flt.search(k)}
out = pathlib.Path(os.environ.get("NGINX_ENVSUBST_OUTPUT_DIR", "/etc/nginx/conf.d"))
pattern = re.compile(r"\$\{(\w+)\}|\$(\w+)")
def fill(m):
    name = m.group(1) or m.group(2)
    return names[name] if name in names else m.group(0)
for template in sorted(pathlib.Path("/etc/nginx/templates").glob("*.template")):
    target = out / template.name.removesuffix(".template")
    target.write_text(pattern.sub(fill, template.read_text()))
    print(f"edge: filled {template} into {target}", flush=True)
PY
exec "$@"
