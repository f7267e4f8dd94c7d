# clustersim report: one self-contained HTML page. Checks the page's text (escaping, tables, the
# numbers plan prints), its errors (exit 2, file:line:col, nothing written), and then renders it
# in headless Chromium: every chart drawn (the page's own count), no console errors, a screenshot
# of the expected size, the numbers present in the rendered page. Exits 77 (skipped) only when no
# Chromium is installed (tools/setup.sh installs the Debian package `chromium`).
source "$(dirname "$0")/cli_test_lib.bash"
cd "$src" || exit 1

# 1. One scenario, the default, and a pair with a name that needs escaping.
"$bin" report -o "$tmp/default.html" >"$tmp/out.txt" 2>"$tmp/err.txt" || fail "report default: $(cat "$tmp/err.txt")"
grep -q "written to $tmp/default.html" "$tmp/out.txt" || fail "report does not say where it wrote"
page="$tmp/default.html"
grep -q '<!DOCTYPE html>' "$page" || fail "not an HTML page"
grep -q 'http://\|https://' "$page" && grep -Eq '<(script|link|img)[^>]+(src|href)="https?:' "$page" &&
  fail "the page loads something from the network"
step=$("$bin" plan --engine analytic | awk '/^  step time/ {print $3, $4; exit}')
[ -n "$step" ] || fail "plan printed no step time"
grep -q "$step" "$page" || fail "the page lacks plan's step time $step"
grep -q 'Owning vs renting over time' "$page" || fail "no owning vs renting section"
# How far the corpus's runs of the default's kind were off, as plan --engine analytic says it.
grep -qF "on the corpus&#39;s" "$page" || grep -qF "on the corpus's" "$page" ||
  fail "the page lacks the accuracy of runs of its kind"
grep -qF "published Hopper dense, multi-node runs the analytic model is off by" "$page" ||
  fail "the page's accuracy line is not the analytic Hopper dense multi-node one"
grep -q 'CBRE' "$page" || fail "the price sources are not listed"

"$bin" report scenarios/tco/ladder-04n-roce200.yaml scenarios/tco/ladder-04n-ndr.yaml \
  --set 'name=<b>A&B</b> "q"' -o "$tmp/pair.html" >/dev/null 2>"$tmp/err.txt" || fail "report pair: $(cat "$tmp/err.txt")"
grep -q '&lt;b&gt;A&amp;B&lt;/b&gt; &quot;q&quot;' "$tmp/pair.html" || fail "a user's name is not escaped"
grep -q '<b>A' "$tmp/pair.html" && fail "a user's name reached the page unescaped"
grep -q 'Fabric ladder' "$tmp/pair.html" || fail "two fabrics of one size: no fabric ladder"
grep -q 'id="comparison"' "$tmp/pair.html" || fail "several scenarios: no comparison"

# 2. Errors: exit 2, the place named, nothing written (an existing file left as it was).
expect_bad report "-o FILE.html" scenarios/default.yaml
printf 'name: broken\ncluster:\n  nodez: 2\n' >"$tmp/broken.yaml"
echo keep >"$tmp/keep.html"
expect_bad report "broken.yaml:3:3: cluster.nodez: unknown key" "$tmp/broken.yaml" -o "$tmp/keep.html"
[ "$(cat "$tmp/keep.html")" = keep ] || fail "a failed report touched the output file"
expect_bad report "cost.pue" scenarios/default.yaml --set cost.pue=0.5 -o "$tmp/keep.html"
expect_bad report "$tmp/no/such/folder/r.html" -o "$tmp/no/such/folder/r.html"
expect_bad_set_keys report scenarios/default.yaml -o "$tmp/keep.html"
[ "$(cat "$tmp/keep.html")" = keep ] || fail "a failed report touched the output file"
ls "$tmp"/keep.html.* >/dev/null 2>&1 && fail "a temporary file was left behind"

# 3. The page in a real browser.
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  [ "$fails" -ne 0 ] && finish report_cli
  echo "report_cli: no Chromium installed (tools/setup.sh installs it): the browser checks skipped"
  exit 77
fi
render() {  # render PAGE: DOM to $tmp/dom.html, console to $tmp/console.txt, screenshot $tmp/shot.png
  local flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile"
    --enable-logging=stderr --v=0 --window-size=1200,2400 --hide-scrollbars)
  timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$1" >"$tmp/dom.html" 2>"$tmp/console.txt" ||
    fail "$browser could not render $1"
  timeout 120 "$browser" "${flags[@]}" --screenshot="$tmp/shot.png" "file://$1" >/dev/null 2>&1 ||
    fail "$browser could not take a screenshot of $1"
}
check_rendered() {  # check_rendered PAGE NUMBER...
  local page="$1"
  shift
  render "$page"
  local expected drawn
  expected=$(grep -o 'data-charts-expected="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*')
  drawn=$(grep -o 'data-charts-drawn="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*')
  [ -n "$expected" ] && [ "$expected" -ge 5 ] || fail "$page: expected at least 5 charts, page says '$expected'"
  [ "$drawn" = "$expected" ] || fail "$page: $drawn of $expected charts drawn in the browser"
  grep -E 'CONSOLE|Uncaught' "$tmp/console.txt" >"$tmp/console-errors.txt" &&
    fail "$page: console messages: $(head -3 "$tmp/console-errors.txt")"
  for n in "$@"; do grep -qF -- "$n" "$tmp/dom.html" || fail "$page: '$n' not in the rendered page"; done
  [ -s "$tmp/shot.png" ] || fail "$page: no screenshot"
  # PNG header: width and height, big-endian, at bytes 16-23; the page has pixels to show.
  local size
  size=$(od -An -tu1 -j16 -N8 "$tmp/shot.png" | awk '{print $3*256+$4 "x" $7*256+$8}')
  [ "$size" = "1200x2400" ] || fail "$page: screenshot is $size, want 1200x2400"
  [ "$(stat -c %s "$tmp/shot.png")" -gt 40000 ] || fail "$page: the screenshot is nearly blank"
}
check_rendered "$tmp/default.html" "$step" "Owning vs renting over time" "capacity 80 GiB"
check_rendered "$tmp/pair.html" "ladder-04n" "&lt;b&gt;A&amp;B&lt;/b&gt;" "Fabric ladder"
# The check itself catches a chart that draws nothing.
sed 's/class="mark"/class="nomark"/g' "$tmp/default.html" >"$tmp/blank.html"
saved=$fails
check_rendered "$tmp/blank.html" >/dev/null 2>&1
[ "$fails" -gt "$saved" ] || fail "an undrawn chart went unnoticed"
fails=$saved
finish report_cli
