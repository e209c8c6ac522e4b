"""Print the text of each page of a PDF: python extract.py FILE (needs pypdf)."""

import sys

from pypdf import PdfReader

for number, page in enumerate(PdfReader(sys.argv[1]).pages, 1):
    print(f"--- page {number}")
    print(page.extract_text())
