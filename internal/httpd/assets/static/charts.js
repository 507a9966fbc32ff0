// Runnel console: the charts. Each element with data-chart-kind and data-chart-name
// gets the node's last hour of that topic's, node's or group's series
// (GET /api/v1/charts), drawn as inline SVG: no library, nothing fetched elsewhere.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 560, H = 110, PAD = 4;
  var labels = { bytes_in: "Bytes in", records_in: "Records in", records_out: "Records out (consumed, committed)", lag: "Lag" };

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function fmt(v) {
    if (v >= 1e9) return (v / 1e9).toFixed(1) + " G";
    if (v >= 1e6) return (v / 1e6).toFixed(1) + " M";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + " k";
    return v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(2);
  }

  // draw appends one series' figure to box.
  function draw(box, s, interval) {
    var fig = document.createElement("figure");
    fig.className = "chart";
    fig.dataset.metric = s.metric;
    var vals = s.points.filter(function (p) { return p[1] !== null; });
    var last = vals.length ? vals[vals.length - 1][1] : null;
    var cap = document.createElement("figcaption");
    cap.textContent = (labels[s.metric] || s.metric) + " (" + s.unit + "): " + (last === null ? "no data yet" : fmt(last));
    fig.appendChild(cap);
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
      "aria-label": cap.textContent }, fig);
    el("rect", { x: 0, y: 0, width: W, height: H, class: "chart-bg" }, svg);
    // The x axis spans the samples the node has, at most the hour it keeps: a node
    // that started minutes ago shows those minutes across the whole width.
    var now = Date.now(), oldest = s.points.length ? s.points[0][0] : now;
    var span = Math.min(3600 * 1000, Math.max(now - oldest, 4 * interval * 1000));
    var top = 0;
    vals.forEach(function (p) { top = Math.max(top, p[1]); });
    top = top > 0 ? top * 1.1 : 1;
    var x = function (t) { return PAD + (W - 2 * PAD) * (1 - (now - t) / span); };
    var y = function (v) { return H - PAD - (H - 2 * PAD) * v / top; };
    // A null point or a missing sample breaks the line.
    var seg = [], prevT = null;
    function flush() {
      if (seg.length > 1) el("polyline", { points: seg.join(" "), class: "chart-line" }, svg);
      else if (seg.length === 1) { var xy = seg[0].split(","); el("circle", { cx: xy[0], cy: xy[1], r: 2, class: "chart-dot" }, svg); }
      seg = [];
    }
    s.points.forEach(function (p) {
      if (p[1] === null || (prevT !== null && p[0] - prevT > 2.5 * interval * 1000)) flush();
      if (p[1] !== null) seg.push(x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1));
      prevT = p[0];
    });
    flush();
    el("text", { x: PAD + 2, y: 12, class: "chart-axis" }, svg).textContent = fmt(top / 1.1 || 0) + " max";
    el("text", { x: PAD + 2, y: H - 6, class: "chart-axis" }, svg).textContent = Math.round(span / 60000) + " min ago";
    el("text", { x: W - PAD - 2, y: H - 6, class: "chart-axis", "text-anchor": "end" }, svg).textContent = "now";
    box.appendChild(fig);
  }

  function load(box) {
    var q = "kind=" + encodeURIComponent(box.dataset.chartKind) + "&name=" + encodeURIComponent(box.dataset.chartName);
    fetch("/api/v1/charts?" + q, { credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.message || ("HTTP " + r.status));
        return j;
      });
    }).then(function (d) {
      box.textContent = "";
      d.series.forEach(function (s) { draw(box, s, d.interval_seconds); });
      box.dataset.loaded = "1";
    }).catch(function (err) {
      box.textContent = "Charts unavailable: " + err.message;
      box.dataset.loaded = "error";
    });
  }

  document.querySelectorAll("[data-chart-kind]").forEach(load);
})();
