// Facet console: helpers shared by the pages. No framework, no network but
// this origin's JSON endpoints; text is always set as text (never as HTML).
'use strict';

const Facet = (() => {
  // Returns a new element: el('td', {class: 'x'}, 'text', child, ...).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // Replaces `parent`'s children with `children`.
  function fill(parent, ...children) {
    parent.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  }

  function clock(date) {
    return date.toLocaleTimeString([], {hour12: false});
  }

  // Polls `url` (a string, or a function returning one) every `interval_ms`
  // (or four times as long as the last answer took, if longer) after the
  // previous answer, only while the page is visible (a hidden tab
  // asks nothing), and calls onData(json) or onError(message). An answer
  // with an ETag is asked for again with If-None-Match: an unchanged one
  // (304, no body; /status) calls nothing and costs the server no JSON. The status
  // line (#live) says when the data was read. Returns a function that asks
  // again at once (e.g. after the URL changed).
  function poll(url, onData, {interval_ms = 1000, onError} = {}) {
    const urlOf = typeof url === 'function' ? url : () => url;
    const live = document.getElementById('live');
    let timer = null;
    let inFlight = false;
    let lastUrl = null;
    let etag = null;  // Of the last answer read from lastUrl.
    async function tick() {
      timer = null;
      if (document.hidden || inFlight) return;
      inFlight = true;
      const started = performance.now();
      try {
        const target = urlOf();
        const headers = {Accept: 'application/json'};
        if (etag !== null && target === lastUrl) headers['If-None-Match'] = etag;
        // no-store: the 304 reaches this code instead of the browser's cache.
        const response = await fetch(target, {cache: 'no-store', headers});
        const text = await response.text();
        if (response.status !== 304) {
          if (!response.ok) throw new Error(`${target}: HTTP ${response.status}: ${text.trim()}`);
          onData(JSON.parse(text));
          lastUrl = target;
          etag = response.headers.get('ETag');
        }
        if (live) {
          live.textContent = `live · updated ${clock(new Date())}`;
          live.classList.remove('down');
        }
      } catch (error) {
        if (live) {
          live.textContent = `not updating: ${error.message}`;
          live.classList.add('down');
        }
        if (onError) onError(error.message);
      } finally {
        inFlight = false;
        // A slow answer (a large /status) spaces the polls out, so one open
        // page keeps the admin thread busy at most a fifth of the time.
        schedule(Math.max(interval_ms, 4 * (performance.now() - started)));
      }
    }
    function schedule(delay_ms = interval_ms) {
      if (timer === null && !document.hidden) timer = setTimeout(tick, delay_ms);
    }
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && timer === null && !inFlight) tick();
    });
    tick();
    return () => {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (!inFlight) tick();
    };
  }

  // A badge for an outcome: its class carries the colour, its text the word
  // (the colour is never the only signal).
  function badge(kind, text) {
    return el('span', {class: `badge ${kind}`}, text);
  }

  return {el, fill, clock, poll, badge};
})();
