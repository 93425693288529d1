// lockbench report: draws the timeline of a run report from the embedded
// data (script#lockbench-data). Self-contained: no network, no libraries.
// The markup already holds lanes, fault bands and violation marks placed
// for the whole run; this script draws each lane's intervals on a canvas,
// merging what falls within a pixel, and re-places the bands on zoom.
(function () {
  'use strict';
  // Script errors are counted on the body (data-errors) for the browser
  // tests; a page must have none.
  var errors = 0;
  window.addEventListener('error', function () {
    errors++;
    document.body.setAttribute('data-errors', String(errors));
  });

  // Layout self-check, for the browser tests and for anyone reading the
  // DOM: the page's width against the window's, and whether every chart's
  // legend lies inside its SVG.
  function checkLayout() {
    var de = document.documentElement;
    document.body.setAttribute('data-page-width', String(de.scrollWidth));
    document.body.setAttribute('data-window-width', String(window.innerWidth));
    document.body.setAttribute('data-window-height', String(window.innerHeight));
    // The result line must be on the first screen.
    var outcome = document.querySelector('.outcome');
    if (outcome) { outcome.setAttribute('data-bottom', String(Math.ceil(outcome.getBoundingClientRect().bottom))); }
    Array.prototype.forEach.call(document.querySelectorAll('svg.cdf'), function (svg) {
      var vb = svg.viewBox.baseVal, fits = true;
      Array.prototype.forEach.call(svg.querySelectorAll('.legend-item'), function (g) {
        var b = g.getBBox();
        if (b.x < 0 || b.y < 0 || b.x + b.width > vb.width + 0.5 || b.y + b.height > vb.height + 0.5) { fits = false; }
      });
      svg.setAttribute('data-legend-fits', fits ? 'yes' : 'no');
    });
  }
  window.addEventListener('resize', checkLayout);
  timeline();
  checkLayout();

  function timeline() {
  var dataEl = document.getElementById('lockbench-data');
  var root = document.getElementById('timeline');
  if (!dataEl || !root) { return; }
  var D = JSON.parse(dataEl.textContent);
  var unit = D.unit || 1;
  var END = Math.max(D.end, 1);
  var view = { a: 0, b: END };
  var body = root.querySelector('.tl-body');
  var axis = document.getElementById('tl-axis');
  var tip = document.getElementById('tl-tip');
  var range = document.getElementById('tl-range');
  var byProc = {};
  D.lanes.forEach(function (l) { byProc[l.p] = l; });
  var lanes = Array.prototype.slice.call(root.querySelectorAll('.lane'));
  var placed = Array.prototype.slice.call(root.querySelectorAll('.fault, .violation'));
  var css = getComputedStyle(document.documentElement);
  function color(name) { return css.getPropertyValue(name).trim() || '#888'; }
  var C = {
    wait: color('--wait'), waitx: color('--waitx'), waitc: color('--waitc'), hold: color('--hold'), poss: color('--poss'),
    pause: 'rgba(90,90,90,0.3)', crash: '#000', lost: '#8a2be2', gone: '#d4a000',
    read: color('--read'), wok: color('--wok'), wrej: color('--wrej'), wunk: color('--wunk')
  };
  // Marks by kind (timeline.go's markCrash, markLeaseLost, markKeyGone).
  var markColor = { 1: C.crash, 2: C.lost, 3: C.gone };
  var markName = { 1: 'crash', 2: 'lease lost', 3: 'its lock key deleted' };
  // Layers the reader can switch off (checkboxes data-layer).
  var layers = { holds: true, faults: true, resource: true, violations: true };
  Array.prototype.forEach.call(document.querySelectorAll('input[data-layer]'), function (cb) {
    cb.addEventListener('change', function () {
      var name = cb.getAttribute('data-layer');
      layers[name] = cb.checked;
      root.classList.toggle('hide-' + name, !cb.checked);
      schedule();
    });
  });

  function fmt(t) { // t in data units → text
    var ns = t * unit, a = Math.abs(ns);
    if (ns === 0) { return '0'; }
    if (a >= 1e9) { return +(ns / 1e9).toFixed(3) + 's'; }
    if (a >= 1e6) { return +(ns / 1e6).toFixed(3) + 'ms'; }
    if (a >= 1e3) { return +(ns / 1e3).toFixed(3) + 'µs'; }
    return Math.round(ns) + 'ns';
  }

  function sizeCanvas(cv) {
    var dpr = window.devicePixelRatio || 1;
    var w = cv.clientWidth, h = cv.clientHeight;
    if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
      cv.width = Math.round(w * dpr);
      cv.height = Math.round(h * dpr);
    }
    var ctx = cv.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    return { ctx: ctx, w: w, h: h };
  }

  // layer draws intervals (flat array, `stride` numbers each, sorted by
  // start) between y and y+h, merging those within a pixel of each other.
  // It returns how many rectangles it drew.
  function layer(ctx, arr, stride, W, y, h, fill) {
    if (!arr || !arr.length) { return 0; }
    var a = view.a, b = view.b, k = W / (b - a), n = 0, cx0 = 0, cx1 = -1;
    ctx.fillStyle = fill;
    for (var i = 0; i < arr.length; i += stride) {
      var s = arr[i], e = arr[i + 1];
      if (s > b) { break; }
      if (e < a) { continue; }
      var x0 = Math.max((s - a) * k, 0), x1 = Math.min((e - a) * k, W);
      if (x1 - x0 < 1) { x1 = x0 + 1; }
      if (cx1 >= 0 && x0 <= cx1 + 1) { if (x1 > cx1) { cx1 = x1; } continue; }
      if (cx1 >= 0) { ctx.fillRect(cx0, y, cx1 - cx0, h); n++; }
      cx0 = x0; cx1 = x1;
    }
    if (cx1 >= 0) { ctx.fillRect(cx0, y, cx1 - cx0, h); n++; }
    return n;
  }

  function hatch(ctx) {
    var p = document.createElement('canvas');
    p.width = 6; p.height = 6;
    var g = p.getContext('2d');
    g.strokeStyle = C.poss; g.lineWidth = 2;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke();
    return ctx.createPattern(p, 'repeat');
  }

  function drawLane(el) {
    var l = byProc[el.getAttribute('data-process')];
    var cv = el.querySelector('canvas');
    if (!cv) { return; }
    var c = sizeCanvas(cv), ctx = c.ctx, W = c.w, H = c.h, n = 0;
    if (!l || W <= 0) { el.setAttribute('data-drawn', '0'); return; }
    var mid = H / 2;
    if (layers.holds) {
      n += layer(ctx, l.pz, 2, W, 0, H, C.pause);
      n += layer(ctx, l.w, 2, W, mid - 1, 2, C.wait);
      n += layer(ctx, l.wx, 2, W, mid - 1, 2, C.waitx);
      n += layer(ctx, l.wc, 3, W, mid - 1, 2, C.waitc);
      n += layer(ctx, l.ph, 2, W, 2, H - 4, hatch(ctx));
      n += layer(ctx, l.h, 3, W, 2, H - 4, C.hold);
    }
    var k = W / (view.b - view.a);
    n += ticks(ctx, l.m, 2, k, function (i) { return [markColor[l.m[i + 1]], 0, H, 3]; });
    if (layers.resource) {
      n += ticks(ctx, l.rd, 2, k, function () { return [C.read, 0, H * 0.45, 2]; });
      n += ticks(ctx, l.wr, 3, k, function (i) {
        var o = l.wr[i + 2];
        return [o === 1 ? C.wok : o === 2 ? C.wrej : C.wunk, H * 0.4, H, 3];
      });
    }
    el.setAttribute('data-drawn', String(n));
  }

  // ticks draws point events (flat array, `stride` numbers each, time
  // first) in view as vertical ticks; style(i) gives [color, y0, y1, width].
  function ticks(ctx, arr, stride, k, style) {
    var n = 0;
    for (var i = 0; arr && i < arr.length; i += stride) {
      var t = arr[i];
      if (t < view.a || t > view.b) { continue; }
      var st = style(i);
      ctx.fillStyle = st[0];
      ctx.fillRect((t - view.a) * k - st[3] / 2, st[1], st[3], st[2] - st[1]);
      n++;
    }
    return n;
  }

  function niceStep(span, px) {
    var raw = span / Math.max(px / 110, 1);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function drawAxis() {
    if (!axis) { return; }
    var c = sizeCanvas(axis), ctx = c.ctx, W = c.w;
    var span = view.b - view.a, k = W / span, step = niceStep(span, W);
    ctx.fillStyle = '#667085'; ctx.font = '10px system-ui, sans-serif'; ctx.textBaseline = 'top';
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      var x = (t - view.a) * k;
      ctx.fillRect(x, 14, 1, 8);
      ctx.fillText(fmt(t), x + 2, 2);
    }
  }

  function place() {
    var span = view.b - view.a;
    placed.forEach(function (el) {
      var f = +el.getAttribute('data-from'), t = +el.getAttribute('data-to');
      if (t < view.a || f > view.b) { el.style.display = 'none'; return; }
      el.style.display = '';
      var l = Math.max(f, view.a), r = Math.min(t, view.b);
      el.style.left = ((l - view.a) / span * 100) + '%';
      el.style.width = ((r - l) / span * 100) + '%';
    });
  }

  var pending = false;
  function draw() {
    pending = false;
    lanes.forEach(drawLane);
    drawAxis();
    place();
    if (range) { range.textContent = fmt(view.a) + ' – ' + fmt(view.b); }
    root.setAttribute('data-view', view.a + ',' + view.b + ',' + END);
    document.body.setAttribute('data-timeline', 'drawn');
  }
  function schedule() {
    if (!pending) { pending = true; window.requestAnimationFrame(draw); }
  }

  function setView(a, b) {
    var minSpan = Math.min(END, 10);
    if (b - a < minSpan) { var m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
    if (b - a > END) { a = 0; b = END; }
    if (a < 0) { b -= a; a = 0; }
    if (b > END) { a -= b - END; b = END; }
    view.a = Math.max(a, 0); view.b = b;
    schedule();
  }
  function zoom(f, t) {
    if (t === undefined) { t = (view.a + view.b) / 2; }
    setView(t - (t - view.a) * f, t + (view.b - t) * f);
  }
  function trackWidth() {
    var tr = root.querySelector('.lane-track');
    return tr ? tr.clientWidth : 1;
  }
  function timeAt(clientX) {
    var tr = root.querySelector('.lane-track');
    var r = tr.getBoundingClientRect();
    return view.a + (clientX - r.left) / r.width * (view.b - view.a);
  }

  body.addEventListener('wheel', function (e) {
    e.preventDefault();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, timeAt(e.clientX));
  }, { passive: false });
  var drag = null;
  body.addEventListener('mousedown', function (e) {
    drag = { x: e.clientX, a: view.a, b: view.b };
    body.classList.add('dragging');
  });
  window.addEventListener('mouseup', function () { drag = null; body.classList.remove('dragging'); });
  window.addEventListener('mousemove', function (e) {
    if (!drag) { return; }
    var dt = (e.clientX - drag.x) / trackWidth() * (drag.b - drag.a);
    setView(drag.a - dt, drag.b - dt);
  });
  body.addEventListener('dblclick', function () { setView(0, END); });
  function on(id, f) { var b = document.getElementById(id); if (b) { b.addEventListener('click', f); } }
  on('tl-reset', function () { setView(0, END); });
  on('tl-in', function () { zoom(0.5); });
  on('tl-out', function () { zoom(2); });

  // Tooltip: what the lane under the pointer was doing.
  function find(arr, stride, t, tol) {
    if (!arr) { return -1; }
    var lo = 0, hi = arr.length / stride;
    while (lo < hi) { var m = (lo + hi) >> 1; if (arr[m * stride] <= t + tol) { lo = m + 1; } else { hi = m; } }
    for (var i = lo - 1; i >= 0 && i >= lo - 8; i--) {
      if (arr[i * stride] - tol <= t && t <= arr[i * stride + 1] + tol) { return i * stride; }
    }
    return -1;
  }
  body.addEventListener('mousemove', function (e) {
    if (!tip || drag) { return; }
    var laneEl = e.target.closest ? e.target.closest('.lane') : null;
    if (!laneEl) { tip.hidden = true; return; }
    var p = laneEl.getAttribute('data-process'), l = byProc[p];
    var t = timeAt(e.clientX), tol = 2 * (view.b - view.a) / trackWidth();
    var lines = ['process ' + p + ' at ' + fmt(t)];
    var i;
    if (l && (i = find(l.h, 3, t, tol)) >= 0) {
      lines.push('holding ' + fmt(l.h[i]) + ' – ' + fmt(l.h[i + 1]) + ' (' + fmt(l.h[i + 1] - l.h[i]) + ')' + (l.h[i + 2] ? ', token ' + l.h[i + 2] : ''));
    } else if (l && (i = find(l.ph, 2, t, tol)) >= 0) {
      lines.push('maybe holding ' + fmt(l.ph[i]) + ' – ' + fmt(l.ph[i + 1]));
    } else if (l && (i = find(l.w, 2, t, tol)) >= 0) {
      lines.push('waiting ' + fmt(l.w[i]) + ' – ' + fmt(l.w[i + 1]) + ' (' + fmt(l.w[i + 1] - l.w[i]) + ')');
    } else if (l && (i = find(l.wx, 2, t, tol)) >= 0) {
      lines.push('waiting, then failed or unknown ' + fmt(l.wx[i]) + ' – ' + fmt(l.wx[i + 1]));
    } else if (l && (i = find(l.wc, 3, t, tol)) >= 0) {
      lines.push('waiting ' + fmt(l.wc[i]) + ' – ' + fmt(l.wc[i + 1]) + ', ' +
        (l.wc[i + 2] === 1 ? 'cancelled by a cancel-waiters fault' : 'cancelled at run end'));
    }
    lines = lines.concat(pointsNear(l, t, tol));
    if (e.target.classList.contains('violation')) { lines.push(e.target.title); }
    tip.textContent = lines.join('\n');
    var r = root.getBoundingClientRect();
    tip.style.left = (e.clientX - r.left + 12) + 'px';
    tip.style.top = (e.clientY - r.top + 12) + 'px';
    tip.hidden = false;
  });
  body.addEventListener('mouseleave', function () { if (tip) { tip.hidden = true; } });

  // pointsNear describes the resource operations and marks near t.
  function pointsNear(l, t, tol) {
    var out = [];
    if (!l) { return out; }
    var i;
    for (i = 0; layers.resource && l.rd && i < l.rd.length; i += 2) {
      if (Math.abs(l.rd[i] - t) <= tol) { out.push('counter read ' + l.rd[i + 1] + ' at ' + fmt(l.rd[i])); }
    }
    for (i = 0; layers.resource && l.wr && i < l.wr.length; i += 3) {
      if (Math.abs(l.wr[i] - t) <= tol) {
        var o = l.wr[i + 2];
        out.push('write with token ' + l.wr[i + 1] + (o === 1 ? ' accepted' : o === 2 ? ' rejected (stale token)' : ', outcome unknown') + ' at ' + fmt(l.wr[i]));
      }
    }
    for (i = 0; l.m && i < l.m.length; i += 2) {
      if (Math.abs(l.m[i] - t) <= tol) { out.push(markName[l.m[i + 1]] + ' at ' + fmt(l.m[i])); }
    }
    return out;
  }

  // "show on timeline" links are #v=N: zoom to violation N and highlight
  // its marks. The same works on load, so a link can point at a violation.
  function showViolation(i) {
    var v = D.violations[i];
    if (!v) { return false; }
    var lo = v.from, hi = v.to;
    if (lo === undefined || hi === undefined) { return false; }
    // Small padding: the overlap fills half the view, at least 2% of the
    // run, so a short violation is always zoomed to.
    var pad = Math.max((hi - lo) / 2, END * 0.01, 5);
    setView(lo - pad, hi + pad);
    Array.prototype.forEach.call(root.querySelectorAll('.violation'), function (m) {
      m.classList.toggle('focus', m.getAttribute('data-v') === String(i));
    });
    return true;
  }
  function fromHash() {
    var m = /^#v=(\d+)$/.exec(window.location.hash);
    if (m && showViolation(+m[1])) {
      var sec = document.getElementById('timeline-section');
      // Scroll only when the timeline is not already in the upper half of
      // the window: a page opened at #v=N keeps its header in view.
      var top = sec ? sec.getBoundingClientRect().top : 0;
      if (sec && sec.scrollIntoView && (top < 0 || top > window.innerHeight / 2)) { sec.scrollIntoView(); }
    }
  }
  window.addEventListener('hashchange', fromHash);
  Array.prototype.forEach.call(document.querySelectorAll('a.show-v'), function (a) {
    a.addEventListener('click', function () { window.setTimeout(fromHash, 0); });
  });

  window.addEventListener('resize', schedule);
  // A page opened at #v=N is drawn zoomed at once, not on a later
  // animation frame (a headless browser under load may dump it first).
  fromHash();
  draw();
  }
})();
