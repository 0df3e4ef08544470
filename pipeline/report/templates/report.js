(function () {
  "use strict";
  // Progressive enhancement only: the page is complete without this script.
  function fmt(v) {
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en") : Number(v).toPrecision(3);
  }
  // Method toggles: hide a method's lines in every chart and dim its table rows.
  var bar = document.getElementById("toggles");
  if (bar) {
    bar.hidden = false;
    bar.addEventListener("change", function (event) {
      var box = event.target;
      var name = box.getAttribute("data-toggle");
      if (name === null) return;
      document.querySelectorAll("[data-series]").forEach(function (el) {
        if (el.getAttribute("data-series") === name) el.classList.toggle("off", !box.checked);
      });
    });
  }
  // Hover: the nearest point of a visible line, in data units.
  var tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  document.body.appendChild(tip);
  document.querySelectorAll("svg.chart[data-x0]").forEach(function (svg) {
    var d = svg.dataset;
    var f = {x0: +d.x0, x1: +d.x1, y0: +d.y0, y1: +d.y1, left: +d.left, top: +d.top, pw: +d.pw, ph: +d.ph};
    var lines = Array.prototype.map.call(svg.querySelectorAll("[data-xy]"), function (el) {
      return {el: el, name: el.getAttribute("data-series"), pts: JSON.parse(el.getAttribute("data-xy"))};
    });
    var marker = svg.querySelector(".marker");
    function hide() {
      tip.hidden = true;
      if (marker) marker.setAttribute("visibility", "hidden");
    }
    svg.addEventListener("mousemove", function (event) {
      var ctm = svg.getScreenCTM();
      if (!ctm) return;
      var p = new DOMPoint(event.clientX, event.clientY).matrixTransform(ctm.inverse());
      var best = null;
      lines.forEach(function (line) {
        if (line.el.classList.contains("off")) return;
        line.pts.forEach(function (q) {
          var sx = f.left + (q[0] - f.x0) / (f.x1 - f.x0) * f.pw;
          var sy = f.top + f.ph - (q[1] - f.y0) / (f.y1 - f.y0) * f.ph;
          var dist = (sx - p.x) * (sx - p.x) + (sy - p.y) * (sy - p.y);
          if (best === null || dist < best.dist) best = {dist: dist, sx: sx, sy: sy, q: q, name: line.name};
        });
      });
      if (best === null || best.dist > 900) { hide(); return; }
      tip.textContent = best.name + ": " + d.xlabel + " " + fmt(best.q[0]) + ", " + d.ylabel + " " + fmt(best.q[1]);
      tip.hidden = false;
      tip.style.left = (event.pageX + 14) + "px";
      tip.style.top = (event.pageY + 14) + "px";
      if (marker) {
        marker.setAttribute("cx", best.sx);
        marker.setAttribute("cy", best.sy);
        marker.setAttribute("visibility", "visible");
      }
    });
    svg.addEventListener("mouseleave", hide);
  });
})();
