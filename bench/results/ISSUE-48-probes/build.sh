#!/bin/sh
# Rebuilds corpus/ of the ISSUE-48 fresh probe set from this machine's packages
# (Debian 12: coreutils 9.1-1, grep 3.8-5, gawk 1:5.2.1-2, nodejs 20.x docs).
# groff stamps creation times, so a rebuild differs in bytes, not in text.
set -eu
cd "$(dirname "$0")"
mkdir -p corpus
zcat /usr/share/man/man1/grep.1.gz | groff -man -Tpdf > corpus/grep.pdf
zcat /usr/share/man/man1/ls.1.gz | groff -man -Tpdf > corpus/ls.pdf
zcat /usr/share/man/man1/gawk.1.gz | groff -man -Tpdf > corpus/gawk.pdf
cp /usr/share/doc/nodejs/api/fs.html corpus/node-fs.html
