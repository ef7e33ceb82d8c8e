// The labeling page's side pane (static/js/labeling/side-pane.js): what it shows of the selected image, the counts,
// how far down the ranking every image is labeled, and when it asks for the figures again.
import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { SidePane, countsText, detailHtml, labeledDownTo } from "../../static/js/labeling/side-pane.js";

const facts = { imageId: "7", full: "/images/7/full?a=1&b=2", label: "relevant", common: "Black Skimmer", rank: "3" };

test("the selected image: its label, its facts, and a note while its label is not stored", () => {
  const html = detailHtml(facts, undefined, 0);
  assert.match(html, /<p class="label-name label-relevant">Relevant<\/p>/);
  assert.match(html, /<dt>Species<\/dt><dd>Black Skimmer<\/dd>/);
  assert.match(html, /src="\/images\/7\/full\?a=1&amp;b=2"/);
  assert.doesNotMatch(html, /Observed/); // a fact the image lacks gets no row
  assert.match(detailHtml(facts, { state: "pending" }, 0), /\(saving\)/);
  assert.match(detailHtml(facts, { state: "refused" }, 0), /\(not saved\)/);
  assert.match(detailHtml({ ...facts, label: "" }, undefined, 0), /label-none">Not labeled yet/);
});

test("hostile text in a fact is shown, never run", () => {
  const html = detailHtml({ ...facts, common: '<img src=x onerror="alert(1)">', rights: "A & B", label: '"x' }, undefined, 0);
  assert.match(html, /&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt;/);
  assert.match(html, /A &amp; B/);
  assert.doesNotMatch(html, /<img src=x/);
  assert.match(html, /label-&quot;x/);
});

test("a stack's look-alikes are named with the key that shows them", () => {
  assert.match(detailHtml(facts, undefined, 3), /3 look-alikes<\/strong> wait behind this image/);
  assert.doesNotMatch(detailHtml(facts, undefined, 0), /look-alike/);
});

test("the counts of a save's answer, and nothing when it carried none", () => {
  assert.equal(countsText({ labeled: 12, relevant: 3, unsure: 1 }), "12 labeled, 3 relevant, 1 unsure");
  assert.equal(countsText(undefined), null);
});

test("labeled down to: the first gap among the tiles, or the server's depth below them", () => {
  const tiles = (labels) => labels.map((label, i) => ({ rank: String(i + 1), label }));
  assert.equal(labeledDownTo(tiles(["relevant", "not_relevant", "", "unsure"]), 0, false), 2);
  assert.equal(labeledDownTo(tiles(["", "relevant"]), 40, false), 0);
  assert.equal(labeledDownTo(tiles(["relevant", "not_relevant"]), 40, false), 40); // the server knows deeper ranks
  assert.equal(labeledDownTo(tiles(["relevant", "not_relevant"]), 1, false), 2);
  assert.equal(labeledDownTo(tiles(["relevant"]), 0, true), null); // a ranking that learns has no fixed ranks
  assert.equal(labeledDownTo([{ rank: "51", label: "" }], 0, false), null); // a later page cannot say
  assert.equal(labeledDownTo([], 9, false), null);
});

test("the figures are asked for once, after saving has paused", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const asked = [];
    const element = { dataset: { url: "/queries/1/figures" } };
    const pane = new SidePane({ figures: () => element, reload: (e) => asked.push(e.dataset.url), delayMs: 1500 });
    pane.figuresLater();
    mock.timers.tick(1000);
    pane.figuresLater(); // another save: the wait starts again
    mock.timers.tick(1000);
    assert.deepEqual(asked, []);
    mock.timers.tick(500);
    assert.deepEqual(asked, ["/queries/1/figures"]);
    const gone = new SidePane({ figures: () => null, reload: (e) => asked.push(e), delayMs: 10 });
    gone.figuresLater();
    mock.timers.tick(10);
    assert.equal(asked.length, 1); // no figures on the page (a locked query's pane): nothing asked
  } finally {
    mock.timers.reset();
  }
});

test("the pane writes only where the page has a place for it", () => {
  const detail = { innerHTML: "" };
  const counts = { textContent: "before" };
  const pane = new SidePane({ detail, counts, labeledBox: null, figures: () => null, reload() {}, delayMs: 1 });
  pane.show(facts, undefined, 0);
  assert.match(detail.innerHTML, /Black Skimmer/);
  pane.showCounts(undefined);
  assert.equal(counts.textContent, "before");
  pane.showCounts({ labeled: 1, relevant: 1, unsure: 0 });
  assert.equal(counts.textContent, "1 labeled, 1 relevant, 0 unsure");
  pane.showLabeledDownTo([{ rank: "1", label: "relevant" }], 0, false); // no box: nothing thrown
});
