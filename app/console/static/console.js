/* frontdesk console: live crawl progress (EventSource on the scheduler's SSE stream), copy
   buttons, confirmations and the widget preview's theme variables. Everything works without it. */
(function () {
  'use strict';

  function $(sel, root) { return (root || document).querySelector(sel); }

  // -- live crawl progress ------------------------------------------------------------------
  var box = $('#crawl');
  if (box && window.EventSource) {
    var statusEl = $('#crawl-status'), bar = $('#crawl-bar'), urlEl = $('#crawl-url');
    var start = $('#crawl-start'), cancel = $('#crawl-cancel');
    var source = null;
    function show(p) {
      Array.prototype.forEach.call(box.querySelectorAll('dd[data-key]'), function (dd) {
        var v = p[dd.getAttribute('data-key')];
        dd.textContent = v === null || v === undefined ? '—' : String(v);
      });
      if (urlEl) urlEl.textContent = p.url || '';
      var done = p.fetched + p.not_modified + p.unchanged + p.failed;
      bar.hidden = false;
      bar.max = Math.max(1, done + (p.queued || 0));
      bar.value = done;
    }
    function running(on) {
      start.hidden = on; cancel.hidden = !on;
      box.setAttribute('data-running', on ? 'true' : 'false');
    }
    function listen() {
      if (source) source.close();
      source = new EventSource(box.getAttribute('data-progress-url'));
      source.addEventListener('progress', function (e) {
        var p = JSON.parse(e.data);
        statusEl.textContent = 'running';
        statusEl.setAttribute('data-status', 'running');
        running(true);
        show(p);
      });
      source.addEventListener('done', function (e) {
        source.close(); source = null;
        var job = JSON.parse(e.data);
        if (!job) return;
        statusEl.textContent = job.status + (job.error ? ' — ' + job.error : '');
        statusEl.setAttribute('data-status', job.status);
        if (job.progress) show(job.progress);
        bar.max = 1; bar.value = 1;
        running(false);
      });
      source.onerror = function () { if (source) { source.close(); source = null; } };
    }
    if (box.getAttribute('data-running') === 'true') listen();
  }

  // -- copy buttons ---------------------------------------------------------------------------
  document.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('[data-copy]');
    if (!b) return;
    var el = document.getElementById(b.getAttribute('data-copy'));
    if (!el || !navigator.clipboard) return;
    navigator.clipboard.writeText(el.textContent.trim()).then(function () {
      var old = b.textContent; b.textContent = 'Copied'; setTimeout(function () { b.textContent = old; }, 1500);
    }, function () {});
  });

  // -- confirmations ----------------------------------------------------------------------------
  document.addEventListener('submit', function (e) {
    var f = e.target;
    var q = f.getAttribute && f.getAttribute('data-confirm');
    if (q && !window.confirm(q)) e.preventDefault();
  });

  // -- widget preview theme -------------------------------------------------------------------
  var vars = $('#theme-vars');
  if (vars) {
    try {
      var v = JSON.parse(vars.getAttribute('data-vars') || '{}');
      Object.keys(v).forEach(function (k) {
        if (/^--fd-[a-z-]+$/.test(k)) document.documentElement.style.setProperty(k, String(v[k]));
      });
    } catch (err) { /* a malformed theme leaves the defaults */ }
  }
})();
