// Facet console, overview (/ui/): reads /status every second while visible
// and shows authorities, each object's outcome, files that do not parse and a
// timeline: the server's log (/events: snapshots, rejections, files that stop
// parsing, NACKs, streams it ended) and what the page sees change.
'use strict';

(() => {
  const {el, fill, clock, poll, badge} = Facet;
  const kMaxRows = 500;        // Rows drawn at once; the filter narrows the rest.
  const kMaxEvents = 200;      // Timeline entries kept.

  let status = null;           // The last /status answer.
  let previous = null;         // Facts of the answer before, for the timeline.
  const events = [];

  const filterInput = document.getElementById('filter');
  const onlyProblems = document.getElementById('only-problems');

  function outcomeOf(object) {
    if (object.accepted) return 'accepted';
    return object.serving_previous ? 'previous' : 'rejected';
  }

  function errors(object) {
    return (object.findings || []).filter((f) => f.severity === 'error');
  }

  function nackCount(object) {
    let count = 0;
    for (const variant of object.variants || []) {
      for (const nack of variant.nacks || []) count += nack.count || 0;
    }
    return count;
  }

  // The facts the timeline compares between two answers.
  function factsOf(answer) {
    const objects = new Map();
    for (const object of answer.objects || []) {
      const nacks = new Map();
      for (const variant of object.variants || []) {
        for (const nack of variant.nacks || []) {
          nacks.set(`${variant.name}\u0000${nack.client}\u0000${nack.detail}`,
                    {variant: variant.name, client: nack.client, detail: nack.detail, count: nack.count});
        }
      }
      objects.set(object.object, {outcome: outcomeOf(object), nacks});
    }
    return {version: answer.snapshot_version, objects};
  }

  function addEvent(kind, label, text, at = new Date()) {
    events.push({at, kind, label, text});
    // Newest first; the server's events carry their own times.
    events.sort((a, b) => b.at - a.at);
    if (events.length > kMaxEvents) events.length = kMaxEvents;
  }

  function findingText(finding) {
    if (!finding) return '';
    return `${finding.field ? finding.field + ': ' : ''}${finding.message || finding.reason || ''}`;
  }

  // Adds what the server's log does not say: objects added and removed, and
  // which client NACKed which variant (rejections and files come from /events).
  function recordChanges(now) {
    if (previous === null) return;
    for (const [name, fact] of now.objects) {
      const before = previous.objects.get(name);
      if (!before) addEvent(fact.outcome, 'added', `${name} added (${fact.outcome})`);
      for (const [key, nack] of fact.nacks) {
        const old = before ? before.nacks.get(key) : undefined;
        if (!old || nack.count > old.count) {
          addEvent('nacked', 'NACK', `${nack.client} NACKed ${name} (${nack.variant}): ${nack.detail}`);
        }
      }
    }
    for (const name of previous.objects.keys()) {
      if (!now.objects.has(name)) addEvent('stale', 'removed', `${name} removed`);
    }
  }

  function renderSummary() {
    const objects = status.objects || [];
    const count = (outcome) => objects.filter((o) => outcomeOf(o) === outcome).length;
    const nacked = objects.filter((o) => nackCount(o) > 0).length;
    const item = (label, value, cls) =>
        el('div', {}, el('dt', {}, label), el('dd', {class: cls}, value));
    fill(document.getElementById('summary'),
         item('Snapshot', String(status.snapshot_version || '—').slice(0, 12), 'mono'),
         item('Clients connected', status.streams_open ?? '—'),
         item('Objects', objects.length),
         item('Accepted', count('accepted')),
         item('Rejected', count('rejected'), count('rejected') ? 'rejected-text' : null),
         item('Previous revision serving', count('previous')),
         item('Objects with NACKs', nacked),
         item('Files that do not parse', (status.unparsed_files || []).length));
  }

  function renderAuthorities() {
    const names = status.authorities || [];
    const list = document.getElementById('authorities');
    fill(list, names.length ? names.map((name) => el('li', {class: 'mono'}, name))
                            : [el('li', {}, 'none (old-style names only)')]);
  }

  function renderUnparsed() {
    const files = status.unparsed_files || [];
    document.getElementById('unparsed-section').hidden = files.length === 0;
    fill(document.getElementById('unparsed'),
         files.map((file) => el('li', {class: 'unparsed'},
                                el('code', {}, `${file.file}:${file.line}:${file.column}`), ' ',
                                badge('rejected', 'does not parse'), ' ', file.message)));
  }

  function outcomeCell(object) {
    const outcome = outcomeOf(object);
    const cell = el('td', {});
    if (outcome === 'accepted') {
      cell.append(badge('accepted', 'accepted'));
    } else {
      // The server says when the rejection began.
      const since = object.rejected_since ? new Date(object.rejected_since) : null;
      cell.append(outcome === 'previous'
                      ? badge('previous', 'rejected · previous revision serving')
                      : badge('rejected', 'rejected · not served'),
                  since ? el('span', {class: 'hint'},
                             ' since ', el('time', {datetime: object.rejected_since}, clock(since)))
                        : null);
      cell.append(el('ul', {class: 'reason'},
                     errors(object).map((f) => el('li', {},
                                                  f.field ? el('span', {class: 'field mono'}, `${f.field}: `) : null,
                                                  f.message || f.reason))));
    }
    const warnings = (object.findings || []).filter((f) => f.severity !== 'error');
    if (warnings.length) cell.append(el('div', {class: 'hint'}, `${warnings.length} warning(s): ${findingText(warnings[0])}`));
    return cell;
  }

  function variantsCell(object) {
    const variants = object.variants || [];
    if (!variants.length) return el('td', {class: 'hint'}, '—');
    return el('td', {}, el('ul', {class: 'variants'}, variants.map((v) => {
      const nacks = (v.nacks || []).reduce((n, r) => n + (r.count || 0), 0);
      return el('li', {},
                el('span', {class: 'mono'}, v.name), v.constraints ? ` [${v.constraints}]` : '',
                ` (${v.clients ?? 0})`,
                nacks ? [' ', badge('nacked', `${nacks} NACK${nacks > 1 ? 's' : ''}`)] : null);
    })));
  }

  function renderObjects() {
    const query = filterInput.value.trim().toLowerCase();
    const problemsOnly = onlyProblems.checked;
    const rank = {rejected: 0, previous: 1, accepted: 2};
    const matching = (status.objects || []).filter((o) => {
      if (problemsOnly && o.accepted && nackCount(o) === 0) return false;
      if (!query) return true;
      const text = [o.object, o.kind, o.served_name, o.location,
                    ...(o.findings || []).map(findingText)].join(' ').toLowerCase();
      return text.includes(query);
    });
    // Problems first, then by name: what needs attention is on top.
    matching.sort((a, b) => (rank[outcomeOf(a)] - rank[outcomeOf(b)]) ||
                            (nackCount(b) > 0) - (nackCount(a) > 0) ||
                            a.object.localeCompare(b.object));
    const rows = matching.slice(0, kMaxRows).map((o) =>
        el('tr', {'data-object': o.object, 'data-outcome': outcomeOf(o)},
           el('th', {scope: 'row', class: 'mono'}, o.object,
              o.served_name ? el('div', {class: 'hint'}, o.served_name) : null),
           el('td', {}, o.kind),
           outcomeCell(o),
           variantsCell(o),
           el('td', {class: 'mono hint'}, o.location || '')));
    fill(document.querySelector('#objects tbody'), rows);
    const total = (status.objects || []).length;
    document.getElementById('objects-count').textContent =
        `${matching.length} of ${total} shown${matching.length > kMaxRows ? ` (first ${kMaxRows})` : ''}`;
    const more = document.getElementById('objects-more');
    more.hidden = matching.length <= kMaxRows;
    more.textContent = `${matching.length - kMaxRows} more match; narrow the filter to see them.`;
  }

  function renderTimeline() {
    const list = document.getElementById('timeline');
    if (!events.length) {
      fill(list, el('li', {}, el('span', {class: 'empty'}, 'No change since this page opened.')));
      return;
    }
    fill(list, events.map((e) => el('li', {'data-kind': e.label},
                                    el('time', {datetime: e.at.toISOString()}, clock(e.at)),
                                    el('span', {}, badge(e.kind, e.label)),
                                    el('span', {}, e.text))));
  }

  function render() {
    if (status === null) return;
    renderSummary();
    renderAuthorities();
    renderUnparsed();
    renderObjects();
    renderTimeline();
  }

  filterInput.addEventListener('input', render);
  onlyProblems.addEventListener('change', render);
  // "/" focuses the filter, as on most consoles; Escape clears it.
  document.addEventListener('keydown', (event) => {
    if (event.key === '/' && document.activeElement !== filterInput) {
      event.preventDefault();
      filterInput.focus();
    } else if (event.key === 'Escape' && document.activeElement === filterInput) {
      filterInput.value = '';
      render();
    }
  });

  // The server's own log (/events: snapshots with the pushes between them,
  // rejections, files that stop or start parsing, NACKs by type, streams it
  // ended), from before the page opened too.
  const kServerEvents = {
    snapshot: ['accepted', 'snapshot'], nack: ['nacked', 'NACK'], stream_ended: ['stale', 'stream ended'],
    rejected: ['rejected', 'rejected'], accepted: ['accepted', 'accepted'],
    unparsed: ['rejected', 'unparsed'], parsed: ['accepted', 'parses'],
  };
  let lastSeq = 0;
  poll(() => `../events?after=${lastSeq}`, (answer) => {
    for (const event of answer.events || []) {
      let [kind, label] = kServerEvents[event.kind] || ['stale', event.kind];
      if (event.kind === 'rejected' && event.serving_previous) kind = 'previous';
      addEvent(kind, label, event.text, new Date(event.time));
    }
    lastSeq = answer.last_seq || lastSeq;
    if ((answer.events || []).length) render();
  });

  poll('../status', (answer) => {
    const now = factsOf(answer);
    recordChanges(now);
    previous = now;
    status = answer;
    render();
  });
})();
