#!/usr/bin/env bash
# Regenerates the PDF corpus of TestReadCorpus (Debian: chromium, ghostscript, qpdf,
# python3). The committed files are what the test reads; this says how each was made.
set -euo pipefail
cd "$(dirname "$0")"
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf=chromium-cid.pdf page.html
echo '<html><body></body></html>' >blank.html
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf=chromium-blank.pdf blank.html
rm blank.html
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sOutputFile=gs-type1.pdf text.ps
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfimage24 -r72 -sOutputFile=image-only.pdf gs-type1.pdf # pages as images
qpdf --object-streams=generate chromium-cid.pdf objstm.pdf
qpdf --encrypt "" owner 256 -- gs-type1.pdf aes256-empty.pdf
qpdf --encrypt "" owner 128 --use-aes=y -- gs-type1.pdf aes128-empty.pdf
qpdf --allow-weak-crypto --encrypt "" owner 40 -- gs-type1.pdf rc4-empty.pdf
qpdf --encrypt user owner 256 -- gs-type1.pdf aes256-user.pdf
qpdf --linearize gs-type1.pdf linearized.pdf
python3 - <<'PY'
def build(objs):
    out = bytearray(b"%PDF-1.4\n"); offs = []
    for i, o in enumerate(objs):
        offs.append(len(out)); out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    x = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs: out += b"%010d 00000 n \n" % o
    out += b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
    return out, x
def stream(s): return b"<</Length %d>>\nstream\n" % len(s) + s + b"\nendstream"
cat, pages = b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[3 0 R]/Count 1>>"
# A page without a content stream (the reader of issue 25 looped on it), with and without resources.
open("no-content-stream.pdf", "wb").write(build([cat, pages, b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Resources<<>>>>"])[0])
open("nocontent-bare.pdf", "wb").write(build([cat, pages, b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>"])[0])
open("empty-stream.pdf", "wb").write(build([cat, pages, b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R>>", stream(b"")])[0])
# An incremental update: object 4 (the page's content) replaced, an /Info added, /Prev to the first xref.
out, x = build([cat, pages, b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
    stream(b"BT /F1 12 Tf 72 720 Td (Original text before the update) Tj ET"), b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>"])
upd = bytearray(); o4 = len(out)
upd += b"4 0 obj\n" + stream(b"BT /F1 12 Tf 72 720 Td (Updated text after the incremental save) Tj ET") + b"\nendobj\n"
o6 = len(out) + len(upd); upd += b"6 0 obj\n<</Title(Incremental fixture)>>\nendobj\n"
x2 = len(out) + len(upd)
upd += b"xref\n0 1\n0000000000 65535 f \n4 1\n%010d 00000 n \n6 1\n%010d 00000 n \n" % (o4, o6)
upd += b"trailer\n<</Size 7/Root 1 0 R/Info 6 0 R/Prev %d>>\nstartxref\n%d\n%%%%EOF\n" % (x, x2)
open("incremental.pdf", "wb").write(out + upd)
PY
