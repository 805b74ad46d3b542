#!/usr/bin/env bash
# OCR for scanned PDFs and images: Debian's Tesseract and its English data.
#
# The retrieval service runs the `tesseract` program (services/retrieval/extract/_ocr.py);
# without it, scans and images are refused as NO_TEXT_LAYER with a message saying OCR is
# not available and how to enable it. Installed here only when missing and we are root
# (CI: a fresh Debian 12 as root); otherwise this says how and `make setup` goes on.
# More languages: OCR_PACKAGES="tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu" and
# RETRIEVAL_OCR_LANGUAGES=eng+deu.
set -euo pipefail

packages=${OCR_PACKAGES:-"tesseract-ocr tesseract-ocr-eng"}

if command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -qx eng; then
  echo "ocr: $(tesseract --version 2>/dev/null | head -1) with eng already installed"
  exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "ocr: installing $packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086 # the package list is words
  apt-get install -y -q --no-install-recommends $packages >/dev/null
  echo "ocr: $(tesseract --version 2>/dev/null | head -1) installed"
  exit 0
fi
cat >&2 <<MSG
ocr: tesseract (with English data) is not installed, and this is not root with apt-get:
ocr:   sudo apt-get install -y --no-install-recommends $packages
ocr: until then scanned PDFs and images are refused as "OCR is not available".
MSG
