// The staff's map of the whole collection (templates/annotator/collection_map.html): the labeling page's map
// panel without a grid: a click opens the image, a lasso or a box counts what it holds.

import { wireMap } from "./map-panel.js";

const page = document.getElementById("collection-map");
if (page) {
  const url = (name, id) => page.dataset[name].replace(/\/0\//, `/${encodeURIComponent(id)}/`);
  wireMap(document.getElementById("map-panel"), {
    grid: { current: () => null },
    thumbUrl: (id) => url("thumbUrl", id),
    onPick: (imageId) => { window.open(url("fullUrl", imageId), "_blank", "noopener"); return true; },
    onRestNotRelevant: async () => "",
  });
}
