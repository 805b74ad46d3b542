"""Pieces of real man pages, as ``man PAGE | col -b`` renders them (bzip2 1.0.8 and GNU
sed 4.9; not tar, xargs or gzip, where the product is measured), for the tests of answers
that stop at the option asked about."""

from __future__ import annotations

# bzip2(1): each option's name on a line of its own, its description indented below;
# a blank line between options; "decompres-/sion" hyphenated at the margin (U+2010).
BZIP2_OPTIONS = (
    "OPTIONS\n"
    "       -c --stdout\n"
    "              Compress or decompress to standard output.\n"
    "\n"
    "-d --decompress\n"
    "              Force  decompression.   bzip2,  bunzip2 and bzcat are really the\n"
    "              same program, and the decision about what  actions  to  take  is\n"
    "              done  on  the basis of which name is used.  This flag overrides\n"
    "              that mechanism, and forces bzip2 to decompress.\n"
    "\n"
    "-k --keep\n"
    "              Keep (don't delete) input files during compression or decompres\u2010\n"
    "              sion.\n"
    "\n"
    "-s --small\n"
    "              Reduce memory usage, for compression, decompression and testing.\n"
    "              Files are decompressed and tested  using  a  modified  algorithm\n"
    "              which only requires 2.5 bytes per block byte."
)
# sed(1): the option's names, a blank line, then its description.
SED_OPTIONS = (
    "-n, --quiet, --silent\n"
    "\n"
    "suppress automatic printing of pattern space\n"
    "\n"
    "--debug\n"
    "\n"
    "annotate program execution\n"
    "\n"
    "-i[SUFFIX], --in-place[=SUFFIX]\n"
    "\n"
    "edit files in place (makes backup if SUFFIX supplied)\n"
    "\n"
    "-z, --null-data\n"
    "\n"
    "separate lines by NUL characters"
)
