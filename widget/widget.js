/*!
 * frontdesk chat widget. Embed: <script src="https://FRONTDESK/widget.js" data-key="KEY" defer></script>
 * Options, theming, test hooks (data-fd / part names) and window.frontdesk: see demo.html.
 *
 * Content-Security-Policy on the host page:
 *   script-src  https://FRONTDESK
 *   connect-src https://FRONTDESK   (POST /v1/chat read as a stream, POST /v1/feedback)
 *   style-src   nothing extra where constructable stylesheets exist (Chrome 73+, Firefox 101+,
 *               Safari 16.4+): CSSStyleSheet.replaceSync() is not governed by style-src. Older
 *               browsers get a <style> in the shadow root with this tag's nonce: allow that
 *               nonce, or 'unsafe-inline'.
 *   No eval, inline script or innerHTML (Trusted Types safe); no images, fonts, frames, cookies.
 * The server must allow the site's origin by CORS and expose Retry-After.
 */
(function () {
  'use strict';
  if (window.frontdesk) return;

  var doc = document;
  var script = doc.currentScript || doc.querySelector('script[data-key][src*="widget"]');
  if (!script) return;
  var ds = script.dataset, key = ds.key;
  var api = (ds.api && base(ds.api)) || base(script.src, 1);
  if (!key || !api) return;

  var MAX = 2000, NS = 'http://www.w3.org/2000/svg', SK = 'frontdesk:' + key;
  var STR = {
    en: {
      title: 'Ask us', greet: 'Hi! Ask me anything about this site.', ph: 'Type your question…',
      q: 'Your question', send: 'Send', stop: 'Stop', close: 'Close', neu: 'New conversation',
      conv: 'Conversation', src: 'Sources', up: 'Helpful', down: 'Not helpful',
      thanks: 'Thanks for the feedback!', retry: 'Retry', stopped: '(stopped)',
      na: 'The assistant is unavailable right now. Check your connection and try again.',
      off: 'You are offline. Check your connection and try again.',
      cut: 'The answer was interrupted.', again: 'Connection problem — trying again…',
      rate: 'Too many questions right now — please wait {n} s',
      err: 'Something went wrong. Please try again.', left: '{n} characters left'
    },
    es: {
      title: 'Pregúntanos', greet: '¡Hola! Pregúntame lo que quieras sobre este sitio.',
      ph: 'Escribe tu pregunta…', q: 'Tu pregunta', send: 'Enviar', stop: 'Detener',
      close: 'Cerrar', neu: 'Nueva conversación', conv: 'Conversación', src: 'Fuentes',
      up: 'Útil', down: 'No es útil', thanks: '¡Gracias por tu opinión!', retry: 'Reintentar',
      stopped: '(detenido)',
      na: 'El asistente no está disponible en este momento. Comprueba tu conexión e inténtalo de nuevo.',
      off: 'No tienes conexión. Comprueba tu conexión e inténtalo de nuevo.',
      cut: 'La respuesta se interrumpió.', again: 'Problema de conexión: reintentando…',
      rate: 'Demasiadas preguntas ahora mismo: espera {n} s',
      err: 'Algo salió mal. Inténtalo de nuevo.', left: 'Quedan {n} caracteres'
    },
    de: {
      title: 'Fragen Sie uns', greet: 'Hallo! Fragen Sie mich alles zu dieser Website.',
      ph: 'Ihre Frage…', q: 'Ihre Frage', send: 'Senden', stop: 'Stopp', close: 'Schließen',
      neu: 'Neues Gespräch', conv: 'Gespräch', src: 'Quellen', up: 'Hilfreich',
      down: 'Nicht hilfreich', thanks: 'Danke für Ihr Feedback!', retry: 'Erneut versuchen',
      stopped: '(gestoppt)',
      na: 'Der Assistent ist gerade nicht erreichbar. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut.',
      off: 'Sie sind offline. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut.',
      cut: 'Die Antwort wurde unterbrochen.', again: 'Verbindungsproblem – neuer Versuch…',
      rate: 'Gerade zu viele Fragen – bitte warten Sie {n} s',
      err: 'Etwas ist schiefgelaufen. Bitte versuchen Sie es erneut.', left: 'Noch {n} Zeichen'
    }
  };
  var lang = String(ds.lang || doc.documentElement.lang || navigator.language || 'en').slice(0, 2).toLowerCase();
  var T = STR[lang] || STR.en;
  var title = ds.title || T.title;
  var color = ds.color && window.CSS && CSS.supports('color', ds.color) ? ds.color : '#1f5f8b';

  var CSS_TEXT = `
    :host{all:initial!important}
    .w{--a:var(--fd-accent,${color});--af:var(--fd-accent-fg,#fff);--bg:var(--fd-bg,#fff);
      --fg:var(--fd-fg,#1f2328);--mu:var(--fd-muted,#59606a);--bd:var(--fd-border,#d5d9de);
      --sf:var(--fd-surface,#f1f3f5);--r:var(--fd-radius,14px);--z:var(--fd-z-index,2147483000);
      font:15px/1.45 var(--fd-font,system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif);
      color:var(--fg);text-align:start;-webkit-text-size-adjust:100%}
    *,::before,::after{box-sizing:border-box}
    [hidden]{display:none!important}
    button,textarea{font:inherit;color:inherit;margin:0;letter-spacing:normal;text-transform:none}
    button{cursor:pointer;background:none;border:0;padding:0}
    button:disabled{cursor:not-allowed;opacity:.5}
    :focus{outline:none}
    :focus-visible{outline:3px solid var(--a);outline-offset:2px}
    svg{width:20px;height:20px;fill:none;stroke:currentColor;stroke-width:2;stroke-linecap:round;
      stroke-linejoin:round;flex:none}
    .sr{position:absolute;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;
      clip:rect(0 0 0 0);white-space:nowrap}
    .l{position:fixed;right:20px;bottom:20px;z-index:var(--z);width:56px;height:56px;border-radius:50%;
      background:var(--a);color:var(--af);display:flex;align-items:center;justify-content:center;
      box-shadow:0 4px 14px rgba(0,0,0,.25);transition:transform .15s}
    .l:hover{transform:scale(1.06)}
    .l svg{width:26px;height:26px}
    .p{position:fixed;right:20px;bottom:88px;z-index:var(--z);width:var(--fd-width,380px);
      max-width:calc(100vw - 40px);height:min(620px,calc(100vh - 112px));display:flex;flex-direction:column;
      background:var(--bg);color:var(--fg);border:1px solid var(--bd);border-radius:var(--r);
      box-shadow:0 12px 40px rgba(0,0,0,.22);overflow:hidden;visibility:hidden;opacity:0;
      transform:translateY(12px);transition:opacity .16s,transform .16s,visibility 0s .16s}
    .left .l,.left .p{right:auto;left:20px}
    .open .p{visibility:visible;opacity:1;transform:none;transition-delay:0s}
    .hd{display:flex;align-items:center;gap:2px;padding:8px 8px 8px 16px;border-bottom:1px solid var(--bd)}
    h2{flex:1;margin:0;font-size:16px;font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
    .ib{width:40px;height:40px;border-radius:8px;display:flex;align-items:center;justify-content:center;color:var(--mu)}
    .ib:hover{background:var(--sf);color:var(--fg)}
    .m{flex:1;min-height:0;overflow-y:auto;overscroll-behavior:contain;padding:14px;display:flex;
      flex-direction:column;gap:10px}
    .b{max-width:88%;padding:9px 12px;border-radius:var(--r);overflow-wrap:anywhere}
    .u{align-self:flex-end;background:var(--a);color:var(--af);border-bottom-right-radius:4px;white-space:pre-wrap}
    .a{align-self:flex-start;background:var(--sf);border-bottom-left-radius:4px}
    .t{white-space:pre-wrap}
    .n{color:var(--mu);font-style:italic}
    .d i{display:inline-block;width:7px;height:7px;margin:0 2px;border-radius:50%;background:var(--mu);
      animation:fd 1s infinite alternate}
    .d i:nth-child(2){animation-delay:.2s}.d i:nth-child(3){animation-delay:.4s}
    @keyframes fd{from{opacity:.25}to{opacity:1}}
    .c{margin-top:8px;padding-top:8px;border-top:1px solid var(--bd);font-size:13px}
    .c p{margin:0 0 4px;color:var(--mu);font-weight:600}
    .c ol{margin:0;padding:0 0 0 18px}
    .c li+li{margin-top:6px}
    .c a{color:var(--a);font-weight:600;text-decoration:underline}
    .c span{display:block;color:var(--mu)}
    .x{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}
    .x button{border:1px solid var(--a);color:var(--a);background:var(--bg);border-radius:999px;
      padding:6px 12px;font-size:13px;font-weight:600}
    .f{display:flex;gap:2px;margin-top:4px}
    .f button{width:32px;height:32px;border-radius:8px;display:flex;align-items:center;justify-content:center;
      color:var(--mu)}
    .f button:hover,.f [aria-pressed=true]{color:var(--a);background:var(--bg)}
    .f svg{width:17px;height:17px}
    .f .dn svg{transform:scaleY(-1)}
    .s{display:flex;align-items:center;gap:8px;padding:8px 14px;font-size:13px;background:#fff6dd;
      color:#4d3800;border-top:1px solid #ecd9a0}
    .s span{flex:1}
    .s button{border:1px solid currentColor;border-radius:8px;padding:4px 10px;font-weight:600}
    form{display:flex;align-items:flex-end;gap:6px;padding:10px;border-top:1px solid var(--bd);margin:0}
    textarea{flex:1;min-width:0;height:42px;max-height:128px;resize:none;padding:10px 12px;font-size:16px;
      line-height:1.3;background:var(--bg);border:1px solid var(--bd);border-radius:10px;display:block}
    textarea::placeholder{color:var(--mu);opacity:1}
    .k{height:42px;padding:0 14px;border-radius:10px;font-weight:600;background:var(--a);color:var(--af)}
    .k.o{background:var(--bg);color:var(--fg);border:1px solid var(--bd)}
    .cn{padding:0 12px 6px;font-size:12px;color:var(--mu);text-align:end}
    @media (max-width:480px){.p,.left .p{inset:0;width:auto;max-width:none;height:auto;border:0;
      border-radius:0}.open .l{display:none}}
    @media (prefers-reduced-motion:reduce){*,::before,::after{transition:none!important;animation:none!important}}
    @media (forced-colors:active){.l,.b,.k,.p{border:1px solid CanvasText}}
    @media print{.w{display:none}}
  `;

  var host, root, launcher, panel, msgBox, form, input, sendBtn, stopBtn, status, statusText,
    retryBtn, counter, live, isOpen = false, cur = null, busy = false, fails = 0,
    rateUntil = 0, rateTimer, retryTimer, lastFail = null, queue = [];
  var state = load(), cid = state.c || null, msgs = Array.isArray(state.m) ? state.m : [];

  function noop() {}
  function base(u, originOnly) {
    try {
      var x = new URL(u, location.href);
      if (!/^https?:$/.test(x.protocol)) return '';
      return originOnly ? x.origin : x.href.replace(/\/+$/, '');
    } catch (e) { return ''; }
  }
  function safeUrl(u) {
    try {
      var x = new URL(String(u), location.href);
      return /^https?:$/.test(x.protocol) ? x.href : '';
    } catch (e) { return ''; }
  }
  function str(v) { return v == null ? '' : String(v); }
  function clean(s) { return str(s).replace(/\s+/g, ' ').trim(); }
  function fmt(s, n) { return s.replace('{n}', n); }
  function each(list, fn) { Array.prototype.forEach.call(list || [], fn); }

  // Builds DOM without ever parsing markup: every string ends up in a text node or attribute.
  function h(tag, attrs, kids) {
    var e = doc.createElement(tag), k, v;
    for (k in attrs || {}) {
      v = attrs[k];
      if (v == null || v === false) continue;
      if (k === 'fd') { e.setAttribute('data-fd', v); e.setAttribute('part', v); }
      else if (k === 'cls') e.className = v;
      else if (k === 'label') { e.setAttribute('aria-label', v); e.title = v; }
      else e.setAttribute(k, v === true ? '' : v);
    }
    each([].concat(kids == null ? [] : kids), function (c) {
      if (c != null) e.appendChild(typeof c === 'object' ? c : doc.createTextNode(c));
    });
    return e;
  }
  function icon(d) {
    var s = doc.createElementNS(NS, 'svg'), p = doc.createElementNS(NS, 'path');
    s.setAttribute('viewBox', '0 0 24 24');
    s.setAttribute('aria-hidden', 'true');
    s.setAttribute('focusable', 'false');
    p.setAttribute('d', d);
    s.appendChild(p);
    return s;
  }
  var I_CHAT = 'M4 5h16v11H10l-5 4v-4H4z', I_X = 'M6 6l12 12M18 6 6 18', I_NEW = 'M12 5v14M5 12h14',
    I_THUMB = 'M7 11v9H4v-9zM7 11l4-8c1.6 0 2.7 1.2 2.3 2.9L12.6 9H18a2 2 0 0 1 2 2.3l-1.2 6.9A2 2 0 0 1 16.8 20H7';

  function load() {
    try { return JSON.parse(sessionStorage.getItem(SK)) || {}; } catch (e) { return {}; }
  }
  function save() {
    try { sessionStorage.setItem(SK, JSON.stringify({ c: cid, o: isOpen, m: msgs.slice(-40) })); } catch (e) { /* storage off or full */ }
  }

  function build() {
    host = doc.createElement('frontdesk-widget');
    var shadow = host.attachShadow({ mode: 'open' });
    try {
      var sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS_TEXT);
      shadow.adoptedStyleSheets = [sheet];
    } catch (e) {
      var st = h('style', null, CSS_TEXT);
      if (script.nonce) st.nonce = script.nonce;
      shadow.appendChild(st);
    }
    launcher = h('button', { type: 'button', cls: 'l', fd: 'launcher', 'aria-expanded': 'false', 'aria-controls': 'fd-panel', label: title }, icon(I_CHAT));
    var newBtn = h('button', { type: 'button', cls: 'ib', fd: 'new', label: T.neu }, icon(I_NEW));
    var closeBtn = h('button', { type: 'button', cls: 'ib', fd: 'close', label: T.close }, icon(I_X));
    msgBox = h('div', { cls: 'm', fd: 'messages', role: 'region', 'aria-label': T.conv, tabindex: '0' });
    statusText = h('span', { fd: 'status-text' });
    retryBtn = h('button', { type: 'button', fd: 'retry', hidden: true }, T.retry);
    status = h('div', { cls: 's', fd: 'status', hidden: true }, [statusText, retryBtn]);
    input = h('textarea', { id: 'fd-q', fd: 'input', rows: '1', maxlength: String(MAX), placeholder: T.ph, autocomplete: 'off', enterkeyhint: 'send', 'aria-describedby': 'fd-cn' });
    stopBtn = h('button', { type: 'button', cls: 'k o', fd: 'stop', hidden: true }, T.stop);
    sendBtn = h('button', { type: 'submit', cls: 'k', fd: 'send' }, T.send);
    form = h('form', { fd: 'form', novalidate: true }, [h('label', { cls: 'sr', 'for': 'fd-q' }, T.q), input, stopBtn, sendBtn]);
    counter = h('div', { cls: 'cn', id: 'fd-cn', fd: 'counter', hidden: true });
    live = h('div', { cls: 'sr', fd: 'live', 'aria-live': 'polite', 'aria-atomic': 'false' });
    panel = h('div', { cls: 'p', id: 'fd-panel', fd: 'panel', role: 'dialog', 'aria-label': title }, [
      h('div', { cls: 'hd' }, [h('h2', { fd: 'title' }, title), newBtn, closeBtn]),
      msgBox, status, form, counter, live
    ]);
    root = h('div', { cls: 'w' + (ds.position === 'left' ? ' left' : '') }, [launcher, panel]);
    shadow.appendChild(root);

    launcher.addEventListener('click', function () { isOpen ? close() : open(); });
    closeBtn.addEventListener('click', close);
    newBtn.addEventListener('click', function () { reset(); input.focus(); });
    stopBtn.addEventListener('click', function () {
      if (cur) { cur.stopped = 1; cur.ctrl.abort(); }
      input.focus();
    });
    retryBtn.addEventListener('click', retry);
    root.addEventListener('keydown', function (e) {
      if (e.key === 'Escape' && isOpen) { e.stopPropagation(); close(); }
      // Full-screen on a phone the page behind is covered: keep Tab inside the panel there.
      if (e.key === 'Tab' && isOpen && matchMedia('(max-width:480px)').matches) {
        var all = Array.prototype.filter.call(panel.querySelectorAll('button,textarea,a[href],[tabindex="0"]'), function (el) {
          return !el.disabled && el.getClientRects().length;
        });
        var first = all[0], last = all[all.length - 1], at = host.shadowRoot.activeElement;
        if (e.shiftKey ? at === first : at === last) { e.preventDefault(); (e.shiftKey ? last : first).focus(); }
      }
    });
    form.addEventListener('submit', function (e) { e.preventDefault(); submit(); });
    input.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) { e.preventDefault(); submit(); }
    });
    input.addEventListener('input', grow);

    greet();
    each(msgs, function (m) {
      if (!m || typeof m !== 'object') return;
      if (m.r === 'u') addUser(m.t);
      else {
        var t = {};
        addBot(t);
        t.tx.textContent = str(m.t);
        if (m.c) cites(t, m.c);
        if (m.id) feedback(t.el, m);
      }
    });
    doc.body.appendChild(host);
    if (state.o || ds.open != null) open(false);
    queue.forEach(function (f) { f(); });
    queue = null;
  }

  function greet() {
    msgBox.appendChild(h('div', { cls: 'b a', fd: 'greeting' }, h('div', { cls: 't' }, ds.greeting || T.greet)));
  }
  function addUser(text) {
    var el = h('div', { cls: 'b u', fd: 'question' }, str(text));
    msgBox.appendChild(el);
    return el;
  }
  function addBot(t) {
    t = t || {};
    t.tx = h('div', { cls: 't', fd: 'answer-text' });
    t.el = h('div', { cls: 'b a', fd: 'answer' }, t.tx);
    msgBox.appendChild(t.el);
    return t.el;
  }
  function nearBottom() { return msgBox.scrollHeight - msgBox.scrollTop - msgBox.clientHeight < 60; }
  function toBottom() { msgBox.scrollTop = msgBox.scrollHeight; }

  function open(focus) {
    if (!isOpen) {
      isOpen = true;
      root.classList.add('open');
      launcher.setAttribute('aria-expanded', 'true');
      toBottom();
      save();
    }
    if (focus !== false) input.focus();
  }
  function close() {
    if (!isOpen) return;
    var hadFocus = host.shadowRoot.activeElement;
    isOpen = false;
    root.classList.remove('open');
    launcher.setAttribute('aria-expanded', 'false');
    save();
    if (hadFocus) launcher.focus();
  }

  function grow() {
    input.style.height = '';
    if (input.scrollHeight > input.clientHeight + 2) input.style.height = Math.min(input.scrollHeight + 2, 128) + 'px';
    var left = MAX - input.value.length;
    counter.hidden = left > 200;
    counter.textContent = fmt(T.left, left);
  }
  function setBusy(b) {
    busy = b;
    var dis = b || rateUntil > Date.now();
    if (dis && host.shadowRoot.activeElement === sendBtn) input.focus();
    sendBtn.disabled = dis;
    if (stopBtn.hidden !== !b) {
      stopBtn.hidden = !b;
      grow(); // the Stop button takes width from the box: re-fit text given back or typed meanwhile
    }
    if (!b && host.shadowRoot.activeElement === stopBtn) input.focus();
  }
  function announce(text) {
    text = clean(text);
    if (!text) return;
    live.appendChild(h('p', null, text));
    while (live.childNodes.length > 4) live.removeChild(live.firstChild);
  }
  // A screen reader hears whole sentences as they complete, not every token.
  function speak(t, all) {
    var m = all ? [t.pend] : /^[\s\S]*(?:[.!?]["'”’)\]]*\s+|[。！？])/.exec(t.pend);
    if (!m && t.pend.length > 300) m = /^[\s\S]*\s/.exec(t.pend) || [t.pend];
    if (m) { announce(m[0]); t.pend = t.pend.slice(m[0].length); }
  }
  function setStatus(text, canRetry) {
    var stick = nearBottom(); // the bar takes height from the messages: keep the newest in view
    status.hidden = !text;
    statusText.textContent = text || '';
    retryBtn.hidden = !canRetry;
    retryBtn.disabled = false;
    if (stick) toBottom();
    if (text) announce(text);
  }

  function submit() {
    if (busy || sendBtn.disabled) return;
    var q = input.value.trim();
    if (!q) return;
    input.value = '';
    grow();
    ask(q);
  }

  function ask(q) {
    q = str(q).trim().slice(0, MAX);
    if (!q) return Promise.resolve('error');
    if (busy) return Promise.resolve('busy');
    if (rateUntil > Date.now()) return Promise.resolve('rate_limited');
    msgs.push({ r: 'u', t: q });
    save();
    addUser(q);
    toBottom();
    return run(q);
  }
  function retry() {
    if (busy || !lastFail) return;
    var f = lastFail;
    lastFail = null;
    if (f.el && f.el.parentNode) f.el.parentNode.removeChild(f.el);
    run(f.q);
  }

  function run(q) {
    var t = { q: q, text: '', pend: '' }, done;
    var result = new Promise(function (r) { done = r; });
    t.end = done;
    clearTimeout(retryTimer);
    lastFail = null;
    setStatus();
    cur = t;
    setBusy(true);
    addBot(t);
    t.tx.appendChild(h('span', { cls: 'd', 'aria-hidden': 'true' }, [h('i'), h('i'), h('i')]));
    toBottom();
    if (navigator.onLine === false) { finish(t, 'offline'); return result; }
    t.ctrl = new AbortController();
    stream(t).then(function (kind) { finish(t, kind); }, function () {
      finish(t, t.stopped ? 'stopped' : t.got ? 'interrupted' : navigator.onLine === false ? 'offline' : 'unavailable');
    });
    return result;
  }

  async function stream(t) {
    var res = await fetch(api + '/v1/chat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ key: key, question: t.q, conversation_id: cid, page: context() }),
      signal: t.ctrl.signal,
      credentials: 'omit',
      cache: 'no-store'
    });
    if (!res.ok) {
      var body = {};
      try { body = (await res.json()) || {}; } catch (e) { /* not JSON */ }
      t.msg = body.message;
      if (res.status === 429) {
        var ra = res.headers.get('Retry-After'), s = +ra;
        if (ra && isNaN(s)) s = (Date.parse(ra) - Date.now()) / 1000;
        t.wait = s || +body.retry_after;
        return 'rate_limited';
      }
      return res.status >= 500 || res.status === 408 ? 'unavailable' : 'error';
    }
    if (!/event-stream/i.test(res.headers.get('Content-Type') || '') || !res.body) return 'unavailable';
    fails = 0;
    t.got = 1;
    var reader = res.body.getReader(), dec = new TextDecoder(), parse = sse(function (type, data) { onEvent(t, type, data); }), timer;
    try {
      for (;;) {
        clearTimeout(timer);
        // A silent stream is a dead stream: the server sends something well within this.
        timer = setTimeout(function () { t.stalled = 1; t.ctrl.abort(); }, 45000);
        var r = await reader.read();
        if (r.done) { parse(dec.decode(), true); break; }
        parse(dec.decode(r.value, { stream: true }));
        if (t.fin) { reader.cancel().catch(noop); break; }
      }
    } finally {
      clearTimeout(timer);
    }
    if (t.fin === 'done') return 'done';
    if (t.fin === 'error') return t.code === 'rate_limited' ? 'rate_limited' : 'error';
    return 'interrupted';
  }

  // Server-Sent Events parser (WHATWG rules): lines end in \r\n, \n or \r, possibly split
  // across chunks; a blank line dispatches; data lines join with \n; ":" lines are comments.
  function sse(emit) {
    var buf = '', type = '', data = [];
    function line(l) {
      if (!l) {
        if (data.length) emit(type || 'message', data.join('\n'));
        type = '';
        data = [];
        return;
      }
      if (l[0] === ':') return;
      var i = l.indexOf(':'), field = i < 0 ? l : l.slice(0, i), val = i < 0 ? '' : l.slice(i + 1);
      if (val[0] === ' ') val = val.slice(1);
      if (field === 'event') type = val;
      else if (field === 'data') data.push(val);
    }
    return function (chunk, end) {
      buf += chunk;
      var re = /\r\n|\r|\n/g, m, start = 0;
      while ((m = re.exec(buf))) {
        if (m[0] === '\r' && re.lastIndex === buf.length && !end) break; // maybe half of \r\n
        line(buf.slice(start, m.index));
        start = re.lastIndex;
      }
      buf = buf.slice(start);
      if (end) buf = ''; // an event without its blank line is incomplete: dropped, as in EventSource
    };
  }

  function onEvent(t, type, data) {
    if (t !== cur || t.fin) return;
    var d;
    try { d = JSON.parse(data); } catch (e) { return; }
    if (!d || typeof d !== 'object') return;
    if (type === 'meta') {
      if (d.conversation_id) { cid = str(d.conversation_id); save(); }
    } else if (type === 'token') {
      if (typeof d.text === 'string' && d.text) token(t, d.text);
    } else if (type === 'citations') {
      t.cites = cites(t, d.citations);
    } else if (type === 'actions') {
      actions(t, d.actions);
    } else if (type === 'done') {
      t.fin = 'done';
      t.id = d.message_id;
    } else if (type === 'error') {
      t.fin = 'error';
      t.code = d.code;
      t.msg = d.message;
      t.wait = +d.retry_after;
    }
  }

  function token(t, s) {
    var stick = nearBottom();
    if (!t.node) {
      t.tx.textContent = '';
      t.node = t.tx.appendChild(doc.createTextNode(''));
    }
    t.node.appendData(s);
    t.text += s;
    t.pend += s;
    speak(t);
    if (stick) toBottom();
  }

  function cites(t, list) {
    var out = [], seen = {}, ol = h('ol');
    each(Array.isArray(list) ? list : [], function (c) {
      var u = c && safeUrl(c.url);
      if (!u || seen[u] || out.length >= 8) return;
      seen[u] = 1;
      var cit = { title: clean(c.title).slice(0, 200), url: u, snippet: clean(c.snippet).slice(0, 240) };
      out.push(cit);
      ol.appendChild(h('li', null, [
        h('a', { href: u, target: '_blank', rel: 'noopener', fd: 'citation' }, cit.title || u),
        cit.snippet ? h('span', null, cit.snippet.length > 180 ? cit.snippet.slice(0, 180) + '…' : cit.snippet) : null
      ]));
    });
    if (t.cbox) t.el.removeChild(t.cbox);
    t.cbox = null;
    if (out.length) {
      var stick = nearBottom();
      t.cbox = t.el.insertBefore(h('div', { cls: 'c', fd: 'citations' }, [h('p', null, T.src), ol]), t.tx.nextSibling);
      if (stick) toBottom();
    }
    return out;
  }

  function find(sel) {
    try { return doc.querySelector(sel); } catch (e) { return null; }
  }
  function actions(t, list) {
    var box = h('div', { cls: 'x', fd: 'actions' });
    each(Array.isArray(list) ? list : [], function (a) {
      if (!a || typeof a !== 'object') return;
      var u = a.url ? safeUrl(a.url) : '', sel = typeof a.selector === 'string' ? a.selector : '';
      if (!u && !(sel && find(sel))) return; // nothing on this page it could do
      var label = clean(a.label || a.name).slice(0, 80);
      if (!label) return;
      var b = h('button', { type: 'button', fd: 'action', 'data-name': str(a.name) }, label);
      b.addEventListener('click', function () {
        var target = sel && find(sel);
        if (target) {
          target.click();
          if (matchMedia('(max-width:480px)').matches) close();
        } else if (u) location.assign(u);
      });
      box.appendChild(b);
    });
    if (box.firstChild) {
      var stick = nearBottom();
      t.el.appendChild(box);
      if (stick) toBottom();
    }
  }

  function feedback(el, rec) {
    var up = h('button', { type: 'button', fd: 'feedback-up', label: T.up, 'aria-pressed': String(rec.f === 'up') }, icon(I_THUMB));
    var dn = h('button', { type: 'button', cls: 'dn', fd: 'feedback-down', label: T.down, 'aria-pressed': String(rec.f === 'down') }, icon(I_THUMB));
    function rate(r, b) {
      return function () {
        if (rec.f) return;
        rec.f = r;
        b.setAttribute('aria-pressed', 'true');
        save();
        announce(T.thanks);
        fetch(api + '/v1/feedback', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ key: key, conversation_id: cid, message_id: rec.id, rating: r }),
          credentials: 'omit',
          keepalive: true
        }).catch(noop);
      };
    }
    up.addEventListener('click', rate('up', up));
    dn.addEventListener('click', rate('down', dn));
    el.appendChild(h('div', { cls: 'f' }, [up, dn]));
  }

  function finish(t, kind) {
    t.end(kind);
    if (t !== cur) return; // superseded by "new conversation"
    cur = null;
    var stick = nearBottom(), dots = t.tx.querySelector('.d');
    if (dots) t.tx.removeChild(dots);
    speak(t, 1);
    if (kind === 'done' || (kind === 'stopped' && t.text)) {
      var rec = { r: 'a', t: t.text, c: t.cites };
      if (kind === 'done') {
        fails = 0;
        if (t.id != null) { rec.id = str(t.id); feedback(t.el, rec); }
      } else t.el.appendChild(h('div', { cls: 'n' }, T.stopped));
      msgs.push(rec);
      save();
      setBusy(false);
      if (stick) toBottom();
      return;
    }
    if (!t.text) { t.el.parentNode.removeChild(t.el); t.el = null; }
    if (kind === 'stopped') { setBusy(false); return; }
    if (kind === 'rate_limited') {
      // Give the question back and block sending until the server's wait is over.
      if (!t.text) {
        var last = msgs[msgs.length - 1];
        if (last && last.r === 'u' && last.t === t.q) {
          msgs.pop();
          save();
          var qs = msgBox.querySelectorAll('[data-fd=question]');
          if (qs.length) msgBox.removeChild(qs[qs.length - 1]);
        }
        if (!input.value) { input.value = t.q; grow(); }
      }
      var wait = Math.ceil(t.wait > 0 ? Math.min(t.wait, 3600) : 10);
      rateUntil = Date.now() + wait * 1000;
      setBusy(false);
      setStatus(fmt(T.rate, wait));
      clearTimeout(rateTimer);
      rateTimer = setTimeout(tick, 1000);
      return;
    }
    setBusy(false);
    lastFail = { q: t.q, el: t.el };
    if (kind === 'unavailable') {
      fails++;
      if (fails === 1) {
        // One quiet automatic retry for a blip; after that the visitor decides.
        setStatus(T.again);
        retryTimer = setTimeout(retry, 1500);
        return;
      }
      setStatus(T.na, true);
      // Back off: each further failure keeps Retry disabled a little longer (max 30 s).
      retryBtn.disabled = true;
      setTimeout(function () { retryBtn.disabled = false; }, Math.min(30000, 1000 * Math.pow(2, fails - 2)));
    } else if (kind === 'offline') setStatus(T.off, true);
    else if (kind === 'interrupted') setStatus(T.cut, true);
    else setStatus(clean(t.msg).slice(0, 300) || T.err, true);
  }
  function tick() {
    var n = Math.ceil((rateUntil - Date.now()) / 1000);
    if (n > 0) {
      statusText.textContent = fmt(T.rate, n); // visible countdown; announced once, above
      rateTimer = setTimeout(tick, 1000);
    } else {
      rateUntil = 0;
      setStatus();
      setBusy(busy);
    }
  }

  function reset() {
    var t = cur;
    cur = null;
    if (t) { t.ctrl && t.ctrl.abort(); t.end('stopped'); }
    clearTimeout(retryTimer);
    lastFail = null;
    cid = null;
    msgs = [];
    msgBox.textContent = '';
    live.textContent = '';
    greet();
    if (!(rateUntil > Date.now())) setStatus();
    setBusy(false);
    save();
  }

  // What the visitor is looking at: sent with each question so the answer can use it.
  function context() {
    var heads = [], ld = [], size = 0, desc = doc.querySelector('meta[name="description"]');
    each(doc.querySelectorAll('h1,h2,h3'), function (e) {
      var s = heads.length < 20 && clean(e.textContent).slice(0, 200);
      if (s) heads.push(s);
    });
    each(doc.querySelectorAll('script[type="application/ld+json"]'), function (e) {
      var v;
      try { v = JSON.parse(e.textContent); } catch (x) { return; }
      each([].concat(v), function (o) {
        if (!o || typeof o !== 'object') return;
        var n = JSON.stringify(o).length;
        if (size + n <= 20000) { size += n; ld.push(o); }
      });
    });
    return {
      url: location.href,
      title: doc.title,
      description: desc ? clean(desc.getAttribute('content')).slice(0, 500) : '',
      headings: heads,
      jsonld: ld,
      lang: doc.documentElement.lang || '',
      local_time: localTime()
    };
  }

  // The visitor's clock with its UTC offset ("2026-12-21T09:15-05:00"): what "today" means.
  function localTime() {
    var d = new Date(), off = -d.getTimezoneOffset(), a = Math.abs(off);
    function two(n) { return (n < 10 ? '0' : '') + n; }
    return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + 'T' + two(d.getHours()) +
      ':' + two(d.getMinutes()) + (off < 0 ? '-' : '+') + two(Math.floor(a / 60)) + ':' + two(a % 60);
  }

  // The API works before the DOM is ready: calls queue until the widget exists.
  function ready(fn) {
    return function () {
      var args = arguments;
      if (!queue) return fn.apply(null, args);
      return new Promise(function (r) { queue.push(function () { r(fn.apply(null, args)); }); });
    };
  }
  window.frontdesk = Object.freeze({
    open: ready(function () { open(); }),
    close: ready(function () { close(); }),
    ask: ready(function (text) { open(); return ask(text); }),
    reset: ready(function () { reset(); })
  });

  if (doc.body) build();
  else doc.addEventListener('DOMContentLoaded', build);
})();
